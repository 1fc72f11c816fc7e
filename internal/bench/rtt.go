package main

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Sizes of the round-trip measurement of a regime.
const (
	rttWarm    = 50  // unmeasured exists first
	rttSamples = 300 // measured exists
)

// regimeInfo describes a regime as measured: the round trip of a raw
// exists through the same route every run of the regime takes.
type regimeInfo struct {
	Name     string   `json:"name"`
	DelayMs  float64  `json:"delay_ms"` // added each way; 0 on loopback
	Route    string   `json:"route"`
	RTTMinMs *float64 `json:"rtt_min_ms"`
	RTTP50Ms *float64 `json:"rtt_p50_ms"`
	RTTP99Ms *float64 `json:"rtt_p99_ms"`
	Error    string   `json:"error,omitempty"`
}

// measureRTT times rttSamples raw exists of one go-zookeeper session
// through regime rg's route.
func measureRTT(ctx context.Context, e *env, rg regime) regimeInfo {
	info := regimeInfo{Name: rg.Name, DelayMs: float64(rg.Delay.Microseconds()) / 1000, Route: "direct, 127.0.0.1"}
	if rg.Delay > 0 {
		info.Route = fmt.Sprintf("a userspace proxy on 127.0.0.1 adding %v each way (deadline-scheduled)", rg.Delay)
	}
	lat, err := timeExists(ctx, e, rg)
	if err != nil {
		info.Error = err.Error()
		return info
	}
	info.RTTMinMs, info.RTTP50Ms, info.RTTP99Ms = percentileMs(lat, 0), percentileMs(lat, 0.5), percentileMs(lat, 0.99)
	return info
}

// timeExists returns the time of each of rttSamples exists, in µs.
func timeExists(ctx context.Context, e *env, rg regime) (lat []int64, err error) {
	rt, err := e.openRoute(rg)
	if err != nil {
		return nil, err
	}
	defer rt.close()
	s, err := dialZK(ctx, rt.ep.Servers, 30*time.Second)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, s.close()) }()
	c := s.c
	lat = make([]int64, rttSamples)
	for i := -rttWarm; i < rttSamples; i++ {
		t0 := time.Now()
		if _, _, err := c.Exists("/"); err != nil {
			return nil, fmt.Errorf("round trip: exists: %w", err)
		}
		if i >= 0 {
			lat[i] = time.Since(t0).Microseconds()
		}
	}
	return lat, nil
}

// describe is a one-line account of the regime.
func (r regimeInfo) describe() string {
	if r.Error != "" {
		return fmt.Sprintf("%s; round trip not measured: %s", r.Route, firstLine(r.Error))
	}
	return fmt.Sprintf("%s; round trip of a raw exists: p50 %.3fms, min %.3fms, p99 %.3fms",
		r.Route, *r.RTTP50Ms, *r.RTTMinMs, *r.RTTP99Ms)
}
