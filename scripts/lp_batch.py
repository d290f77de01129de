"""`llmplan simulate --batch` from Python: the helper the case-study scripts share."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def simulate(llmplan, runs, who):
    """One result object per run description (dicts), in order; exits with
    `who: ...` when llmplan fails or answers a different number of lines."""
    env = dict(os.environ)
    env.setdefault("LLMPLAN_DATA", os.path.join(ROOT, "data"))
    text = "\n".join(json.dumps(r) for r in runs) + "\n"
    p = subprocess.run([llmplan, "simulate", "--batch", "-"], input=text, capture_output=True,
                       text=True, env=env)
    if p.returncode != 0:
        sys.exit(f"{who}: llmplan simulate --batch failed: {p.stderr.strip()}")
    res = [json.loads(x) for x in p.stdout.splitlines() if x.strip()]
    if len(res) != len(runs):
        sys.exit(f"{who}: expected {len(runs)} results, got {len(res)}")
    return res


def save_plot(fig, ax, path, xlabel, ylabel, title=None, legend_size=8):
    """Label, lay out and write one matplotlib figure (PNG, 120 dpi), then close it."""
    import matplotlib.pyplot as plt
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.legend(fontsize=legend_size)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
