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
	var res pairResult
	var ia, ib int
	if warm > 0 {
		if _, _, err := a.run(ctx, warm, &ia); err != nil {
			return res, fmt.Errorf("warm-up: %w", err)
		}
		if _, _, err := b.run(ctx, warm, &ib); err != nil {
			return res, fmt.Errorf("baseline warm-up: %w", err)
		}
	}
	for r := 0; r < rounds; r++ {
		var ua, ub int64
		var da, db time.Duration
		var err error
		first, second := func() error {
			ua, da, err = a.run(ctx, slice, &ia)
			return err
		}, func() error {
			ub, db, err = b.run(ctx, slice, &ib)
			return err
		}
		if r%2 == 1 {
			first, second = second, first
		}
		if err := first(); err != nil {
			return res, err
		}
		if err := second(); err != nil {
			return res, err
		}
		res.a.units += ua
		res.a.elapsed += da
		res.b.units += ub
		res.b.elapsed += db
		if ua > 0 && ub > 0 {
			res.roundRatios = append(res.roundRatios,
				(float64(ua)/da.Seconds())/(float64(ub)/db.Seconds()))
		}
	}
	if res.a.units == 0 || res.b.units == 0 {
		return res, fmt.Errorf("a side did nothing: %d and %d units", res.a.units, res.b.units)
	}
	return res, nil
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// microsPerUnit is the wall time per unit of one side, in microseconds,
// with every client counted: clients x elapsed / units.
func microsPerUnit(t sideTotals, clients int) float64 {
	if t.units == 0 {
		return 0
	}
	return float64(clients) * t.elapsed.Seconds() * 1e6 / float64(t.units)
}
