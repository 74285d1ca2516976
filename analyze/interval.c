/* The report's 90% intervals, from the number of events behind a figure.
 *
 * An estimate X = sum of event weights comes with an estimated variance V
 * (the events' comm_event.var).  Its effective number of events is
 * n = X^2 / V: the number of equally weighted, independently sampled
 * events that would give X with that variance (n is the number of events
 * when they all weigh the same P and stand alone: V = n P (P - 1) ~ n P^2).
 *   volume: the score interval of a Poisson count n, scaled by X / n:
 *           n + z^2/2 -+ z sqrt(n + z^2/4)  (Poisson's own asymmetry; it
 *           never reaches below 0)
 *   share:  a part A of X (true sharing, a pair): the Wilson interval of the
 *           proportion A / X among n trials.
 * V = 0 (every event seen with certainty: exact on a full trace) gives
 * the figure itself. */
#include <math.h>

#include "ana.h"

#define Z90 1.6448536269514722   /* two-sided 90%: the 95th percentile of N(0, 1) */

double effective_events(double total, double var)
{
	if (!(total > 0))
		return 0;
	return var > 0 ? total * total / var : INFINITY;
}

struct interval volume_interval(double total, double var)
{
	double n = effective_events(total, var);
	if (!(n > 0) || isinf(n))
		return (struct interval){ total, total };
	double c = n + Z90 * Z90 / 2, h = Z90 * sqrt(n + Z90 * Z90 / 4);
	return (struct interval){ (c - h) * total / n, (c + h) * total / n };
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
