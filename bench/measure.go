package bench

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// opFunc is one operation of one client: it returns how many units (claims
// renewed, jobs claimed) it did. client numbers its caller, 0 to clients-1,
// and iter counts that client's calls.
type opFunc func(ctx context.Context, conn *pgx.Conn, client, iter int) (int, error)

// load is one side of a comparison: an operation run by a number of
// concurrent clients, each on a connection of its own.
type load struct {
	pool    *pgxpool.Pool
	clients int
	op      opFunc
}

// sideTotals is what one side did over all its rounds.
type sideTotals struct {
	units   int64
	elapsed time.Duration
}

// run runs l for d and returns the units done and the time taken.
func (l load) run(ctx context.Context, d time.Duration, iterBase *int) (int64, time.Duration, error) {
	conns := make([]*pgxpool.Conn, l.clients)
	for i := range conns {
		c, err := l.pool.Acquire(ctx)
		if err != nil {
			for _, c := range conns[:i] {
				c.Release()
			}
			return 0, 0, err
		}
		conns[i] = c
	}
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	var units atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, l.clients)
	start := time.Now()
	deadline := start.Add(d)
	base := *iterBase
	iters := make([]int, l.clients)
	for i := range conns {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for n := 0; time.Now().Before(deadline); n++ {
				u, err := l.op(ctx, conns[i].Conn(), i, base+n)
				if err != nil {
					errs[i] = err
					return
				}
				units.Add(int64(u))
				iters[i] = n + 1
			}
		}(i)
	}
	wg.Wait()
	elapsed := time.Since(start)
	most := 0
	for _, n := range iters {
		most = max(most, n)
	}
	*iterBase = base + most
	return units.Load(), elapsed, errors.Join(errs...)
}

// pairResult is a comparison of two loads run in alternating rounds.
type pairResult struct {
	a, b        sideTotals
	roundRatios []float64 // per round: a's throughput / b's throughput
}

// ratio is the median of the per-round throughput ratios a/b: each round
// runs both sides back to back, so a slow moment of the shared machine
// falls on both of them.
func (p pairResult) ratio() float64 { return median(p.roundRatios) }

// interleave warms both loads up, then runs rounds rounds of a and b for
// slice each, alternating which goes first, and sums what each did.
func interleave(ctx context.Context, a, b load, rounds int, slice, warm time.Duration) (pairResult, error) {
	m, err := interleaveAll(ctx, []load{a, b}, rounds, slice, warm)
	if err != nil {
		return pairResult{}, err
	}
	return m.pair(0, 1), nil
}

// multiResult is a run of several loads in the same interleaved rounds.
type multiResult struct {
	totals []sideTotals
	// perSec[r][i] is load i's throughput in round r, units a second (0
	// when it did nothing in that round).
	perSec [][]float64
}

// pair is loads a and b of m as a comparison of a against b: their totals
// and, for each round in which both did something, a's throughput over b's.
func (m multiResult) pair(a, b int) pairResult {
	res := pairResult{a: m.totals[a], b: m.totals[b]}
	for _, round := range m.perSec {
		if round[a] > 0 && round[b] > 0 {
			res.roundRatios = append(res.roundRatios, round[a]/round[b])
		}
	}
	return res
}

// interleaveAll warms each load up in turn, then runs rounds rounds in
// which every load runs for slice, in the given order in even rounds and in
// reverse order in odd ones (for two loads: alternating which goes first),
// and sums what each did. Loads next to each other in the list run next to
// each other in time in every round.
func interleaveAll(ctx context.Context, loads []load, rounds int, slice, warm time.Duration) (multiResult, error) {
	m := multiResult{totals: make([]sideTotals, len(loads))}
	iters := make([]int, len(loads))
	if warm > 0 {
		for i, l := range loads {
			if _, _, err := l.run(ctx, warm, &iters[i]); err != nil {
				return m, fmt.Errorf("warm-up of side %d: %w", i+1, err)
			}
		}
	}
	for r := 0; r < rounds; r++ {
		perSec := make([]float64, len(loads))
		for k := range loads {
			i := k
			if r%2 == 1 {
				i = len(loads) - 1 - k
			}
			u, d, err := loads[i].run(ctx, slice, &iters[i])
			if err != nil {
				return m, err
			}
			m.totals[i].units += u
			m.totals[i].elapsed += d
			if u > 0 {
				perSec[i] = float64(u) / d.Seconds()
			}
		}
		m.perSec = append(m.perSec, perSec)
	}
	for i, t := range m.totals {
		if t.units == 0 {
			return m, fmt.Errorf("side %d of %d did nothing", i+1, len(loads))
		}
	}
	return m, nil
}

func median(xs []float64) float64 { return quantile(xs, 0.5) }

// quantile is the q-quantile of xs (0 <= q <= 1), interpolated linearly
// between the two nearest values; 0 for no values.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

// microsPerUnit is the wall time per unit of one side, in microseconds,
// with every client counted: clients x elapsed / units.
func microsPerUnit(t sideTotals, clients int) float64 {
	if t.units == 0 {
		return 0
	}
	return float64(clients) * t.elapsed.Seconds() * 1e6 / float64(t.units)
}
