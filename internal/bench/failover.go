package main

import (
	"context"
	"fmt"
	"time"
)

// grant is the outcome of one campaign: participant i leads since at, or
// its campaign failed.
type grant struct {
	i   int
	at  time.Time // taken as soon as the campaign returned
	err error
}

// electorate is the participants of one failover run: participant i
// campaigns on session ss[i] through ls[i].
type electorate struct {
	g   *goLib
	sp  spec
	ep  endpoints
	set *sessionSet
	cr  *crew // the campaigns; closeAll waits for them
	ss  []goSession
	ls  []locker
	led chan grant // every campaign's outcome; room for all of them
}

// failover: P sessions campaign in one election. Each timed failover is
// the stretch from just before the leader steps down (sp.Mode: it
// resigns, or its Client closes) until the next leader's Campaign
// returns. The old leader then rejoins at the tail: a new campaign on its
// own session (resign) or on a new session (close), so that P stay
// queued. WarmReps unmeasured failovers of the same kind come first.
func (g *goLib) failover(ctx context.Context, sp spec, ep endpoints, ph phaser, set *sessionSet) (raw, error) {
	ss, err := g.warmSessions(ctx, sp, ep.Servers, sp.N, set)
	if err != nil {
		return raw{}, err
	}
	el := &electorate{g: g, sp: sp, ep: ep, set: set, cr: set.newCrew(),
		ss: make([]goSession, sp.N), ls: make([]locker, sp.N),
		led: make(chan grant, sp.N+sp.WarmReps+sp.reps())}
	for i, s := range ss {
		if err := el.enlist(ctx, i, s); err != nil {
			return raw{}, err
		}
	}
	first, err := el.next(ctx)
	if err != nil {
		return raw{}, err
	}
	leader := first.i
	for range sp.WarmReps {
		if leader, _, err = el.turn(ctx, leader, sp.Mode, nil); err != nil {
			return raw{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	if err := ph(ctx, phaseReady); err != nil {
		return raw{}, err
	}
	r := raw{Ops: int64(sp.reps()), LatUS: make([]int64, sp.reps())}
	for i := range r.LatUS {
		var d time.Duration
		if leader, d, err = el.turn(ctx, leader, sp.Mode, ph); err != nil {
			return raw{}, fmt.Errorf("failover %d: %w", i+1, err)
		}
		r.LatUS[i], r.Seconds = d.Microseconds(), r.Seconds+d.Seconds()
	}
	return r, ph(ctx, phaseMeasured)
}

// enlist makes participant i campaign on session s, on a goroutine of
// its own that reports the outcome to el.led.
func (el *electorate) enlist(ctx context.Context, i int, s goSession) error {
	l, err := el.g.recipe(s, el.sp, el.sp.Path)
	if err != nil {
		return err
	}
	el.ss[i], el.ls[i] = s, l
	el.cr.spawn(func() error {
		err := l.acquire(ctx)
		el.led <- grant{i: i, at: time.Now(), err: err}
		return err
	})
	return nil
}

// next waits for the next campaign's outcome.
func (el *electorate) next(ctx context.Context) (grant, error) {
	select {
	case gr := <-el.led:
		if gr.err != nil {
			return gr, fmt.Errorf("participant %d's campaign: %w", gr.i, gr.err)
		}
		return gr, nil
	case <-ctx.Done():
		return grant{}, fmt.Errorf("waiting for a leader: %w", ctx.Err())
	}
}

// turn is one failover: the leader steps down the way mode says, the next
// one leads, and the old one rejoins. It returns the new leader and the
// time from just before the step-down until the new leader's campaign
// returned. ph, unless nil, is told of phaseQueued before the step-down
// and of phaseDrained once the new leader leads.
func (el *electorate) turn(ctx context.Context, leader int, mode string, ph phaser) (int, time.Duration, error) {
	if ph == nil {
		ph = func(context.Context, string) error { return nil }
	}
	if err := ph(ctx, phaseQueued); err != nil {
		return 0, 0, err
	}
	start := time.Now()
	var err error
	if mode == stepClose {
		err = el.ss[leader].close()
	} else {
		err = el.ls[leader].release()
	}
	if err != nil {
		return 0, 0, fmt.Errorf("participant %d steps down (%s): %w", leader, mode, err)
	}
	gr, err := el.next(ctx)
	if err != nil {
		return 0, 0, err
	}
	if gr.i == leader {
		return 0, 0, fmt.Errorf("participant %d leads again after stepping down", leader)
	}
	if err := ph(ctx, phaseDrained); err != nil {
		return 0, 0, err
	}
	return gr.i, gr.at.Sub(start), el.rejoin(ctx, leader, mode)
}

// rejoin makes participant i campaign again, at the tail: on its own
// session after a resignation, on a new one after a close.
func (el *electorate) rejoin(ctx context.Context, i int, mode string) error {
	s := el.ss[i]
	if mode == stepClose {
		ss, err := connectN(ctx, el.g.open, el.ep.Servers, 1, el.g.sessionTimeout, el.set)
		if err != nil {
			return fmt.Errorf("participant %d rejoins: %w", i, err)
		}
		s = ss[0]
	}
	return el.enlist(ctx, i, s)
}
