/* The report's 90% intervals, from the number of events behind a figure.
 *
 * An estimate X = sum of event weights comes with an estimated variance V
 * (the events' comm_event.var).  Its effective number of events is
 * n = X^2 / V: the number of equally weighted, independently sampled
 * events that would give X with that variance (n is the number of events
 * when they all weigh the same P and stand alone: V = n P (P - 1) ~ n P^2).
 *
 * Volume: the gamma interval of Fay and Feuer (Statistics in Medicine 16,
 * 1997) for a weighted sum of Poisson counts.  Every estimator here is such
 * a sum: X = sum over the units s (sampled accesses, windows) of I_s w_s,
 * each unit sampled (I_s = 1) with probability 1/P independently, and
 * E[X] = sum w_s / P is the figure estimated.  With w_M the largest weight a
 * unit can carry (comm_event.unit_max: the model derives it), at level
 * 1 - 2a (a = 0.05):
 *   lo = G^-1(a;      shape X^2 / V,                 scale V / X)
 *   hi = G^-1(1 - a;  shape (X + w_M)^2 / (V + w_M^2), scale (V + w_M^2) / (X + w_M))
 * G^-1: the gamma distribution's quantile; the gamma has the estimate's
 * mean and variance, and the upper limit is taken as if one more unit of
 * weight w_M had been sampled.  Why that unit: a unit the sampler missed
 * adds nothing to X nor to V, so where a few units carry much of the volume
 * (lines with fewer accesses than the period: a sampled access there stands
 * for many transfers), the runs that miss them are low AND report a small
 * variance; an interval from X and V alone then misses the value in many
 * more than 10% of the runs (omp_reduce: 11 of 25 at the default period,
 * its lines of the OpenMP team and of the master's stack frame have 12,000
 * and 6,000 accesses, 15% of the transfers, against a period of 10,000).
 * The allowance bounds that miss by the largest unit there could be.  All
 * weights equal P (n events): X = n P, V = n P^2, and the interval is the
 * exact (Garwood) Poisson interval of n, times P.  Fay and Feuer show the
 * interval keeps its level for any weights up to w_M (it is conservative);
 * Bernoulli draws (probability 1/P, at most one each) vary less than the
 * Poisson counts it assumes.
 * Share: a part A of X (true sharing, a pair): the Wilson interval of the
 * proportion A / X among n trials.
 * V = 0 (every event seen with certainty: exact on a full trace) gives the
 * figure itself. */
#include <math.h>

#include "ana.h"

#define Z90 1.6448536269514722   /* two-sided 90%: the 95th percentile of N(0, 1) */
#define TAIL90 0.05              /* each tail of the 90% interval */
#define GAMMA_EPS 1e-13
#define GAMMA_ITER 100000
#define GAMMA_WH_SHAPE 1e5       /* from this shape on: Wilson-Hilferty */

double effective_events(double total, double var)
{
	if (!(total > 0))
		return 0;
	return var > 0 ? total * total / var : INFINITY;
}

/* P(a, x): the regularized lower incomplete gamma function (the gamma
 * distribution's CDF at x, shape a, scale 1); its series below a + 1, the
 * continued fraction of 1 - P (modified Lentz) above. */
static double gamma_cdf(double a, double x)
{
	if (!(x > 0))
		return 0;
	double lead = exp(a * log(x) - x - lgamma(a));
	if (x < a + 1) {
		double term = 1 / a, sum = term;
		for (int n = 1; n < GAMMA_ITER && term > sum * GAMMA_EPS; n++) {
			term *= x / (a + n);
			sum += term;
		}
		return sum * lead;
	}
	double tiny = 1e-300, b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
	for (int i = 1; i < GAMMA_ITER; i++) {
		double an = -i * (i - a);
		b += 2;
		d = an * d + b;
		d = fabs(d) < tiny ? tiny : d;
		c = b + an / c;
		c = fabs(c) < tiny ? tiny : c;
		d = 1 / d;
		double del = d * c;
		h *= del;
		if (fabs(del - 1) < GAMMA_EPS)
			break;
	}
	return 1 - lead * h;
}

/* The q quantile of the gamma distribution of shape a, scale 1: bisection
 * on its CDF; past GAMMA_WH_SHAPE Wilson and Hilferty's cube-root normal
 * approximation (relative error below 1e-6 there). */
static double gamma_quantile(double a, double q)
{
	double z = (q > 0.5 ? 1 : -1) * Z90;   /* q is TAIL90 or 1 - TAIL90 */
	if (a >= GAMMA_WH_SHAPE) {
		double c = 1 / (9 * a), t = 1 - c + z * sqrt(c);
		return a * t * t * t;
	}
	double lo = 0, hi = a + 10 * sqrt(a) + 10;
	while (gamma_cdf(a, hi) < q)
		hi *= 2;
	for (int i = 0; i < 200 && hi - lo > hi * 1e-12; i++) {
		double mid = (lo + hi) / 2;
		if (gamma_cdf(a, mid) < q)
			lo = mid;
		else
			hi = mid;
	}
	return (lo + hi) / 2;
}

struct interval volume_interval(double total, double var, double unit_max)
{
	if (!(var > 0) || !(total > 0))
		return (struct interval){ total, total };
	double w = unit_max > 0 ? unit_max : 0;
	double vu = var + w * w, xu = total + w;
	return (struct interval){
		gamma_quantile(total * total / var, TAIL90) * var / total,
		gamma_quantile(xu * xu / vu, 1 - TAIL90) * vu / xu,
	};
}

struct interval share_interval(double part, double total, double var)
{
	double n = effective_events(total, var);
	double p = total > 0 ? part / total : 0;
	if (!(n > 0) || isinf(n))
		return (struct interval){ p, p };
	double z2 = Z90 * Z90, d = 1 + z2 / n;
	double c = (p + z2 / (2 * n)) / d;
	double h = Z90 * sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / d;
	return (struct interval){ c - h > 0 ? c - h : 0, c + h < 1 ? c + h : 1 };
}
