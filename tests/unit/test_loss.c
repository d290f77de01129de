/* The parametric loss fits against hand computations. */
#include <math.h>

#include "harness.h"
#include "llmplan/loss.h"

TEST(hand_values)
{
    /* 1.69 + 406.4 / (1e9)^0.34 + 410.7 / (2e10)^0.28
     * = 1.69 + 406.4 / 1148.15 + 410.7 / 766.50 = 2.58005 */
    ASSERT_NEAR(lp_loss_chinchilla(LP_LOSS_HOFFMANN2022, 1e9, 2e10), 2.5800478722, 1e-9);
    /* 1.69 + 406.4 / (1e8)^0.34 + 410.7 / (2e9)^0.28 = 3.48587 */
    ASSERT_NEAR(lp_loss_chinchilla(LP_LOSS_HOFFMANN2022, 1e8, 2e9), 3.4858743743, 1e-9);
    /* 1.82 + 482.01 / (1e9)^0.3478 + 2085.43 / (2e10)^0.3658 = 2.53285 */
    ASSERT_NEAR(lp_loss_chinchilla(LP_LOSS_BESIROGLU2024, 1e9, 2e10), 2.5328503237, 1e-9);
    /* more data or more parameters: lower loss; the limit is E */
    ASSERT_TRUE(lp_loss_chinchilla(LP_LOSS_HOFFMANN2022, 1e9, 4e10) <
                lp_loss_chinchilla(LP_LOSS_HOFFMANN2022, 1e9, 2e10));
    ASSERT_NEAR(lp_loss_chinchilla(LP_LOSS_BESIROGLU2024, 1e30, 1e30), 1.82, 1e-6);
}

TEST(names_and_bad_input)
{
    enum lp_loss_fit f;
    ASSERT_OK(lp_loss_fit_parse("besiroglu2024", &f));
    ASSERT_TRUE(f == LP_LOSS_BESIROGLU2024);
    ASSERT_EQ_STR(lp_loss_fit_name(LP_LOSS_HOFFMANN2022), "hoffmann2022");
    ASSERT_TRUE(lp_loss_fit_parse("kaplan", &f) != 0);
    ASSERT_TRUE(isnan(lp_loss_chinchilla(LP_LOSS_HOFFMANN2022, 0, 1e9)));
    ASSERT_TRUE(isnan(lp_loss_chinchilla(LP_LOSS_FIT_COUNT, 1e9, 1e9)));
    ASSERT_NEAR(lp_loss_fit_params(LP_LOSS_HOFFMANN2022)->alpha, 0.34, 1e-12);
}

TH_MAIN(TH_CASE(hand_values), TH_CASE(names_and_bad_input))
