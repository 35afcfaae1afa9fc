package metrics

import (
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latency is a goroutine-safe HDR histogram of durations, recorded in
// microseconds from 1 µs to 10 minutes with 3 significant figures.
// hdrhistogram-go itself is not goroutine-safe and takes quantiles as 0–100.
type Latency struct {
	mu         sync.Mutex
	h          *hdrhistogram.Histogram
	outOfRange int64
}

// NewLatency returns an empty histogram.
func NewLatency() *Latency {
	return &Latency{h: hdrhistogram.New(1, int64(10*time.Minute/time.Microsecond), 3)}
}

// Record adds one duration; values outside the histogram's range are counted
// in OutOfRange instead.
func (l *Latency) Record(d time.Duration) {
	us := d.Microseconds()
	if us < 1 {
		us = 1
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.h.RecordValue(us); err != nil {
		l.outOfRange++
	}
}

// LatencySummary is a histogram's summary: percentiles and max in
// milliseconds (rounded to the µs), Count in recorded values.
type LatencySummary struct {
	Count      int64   `json:"count"`
	P50        float64 `json:"p50"`
	P90        float64 `json:"p90"`
	P99        float64 `json:"p99"`
	P999       float64 `json:"p99_9"`
	Max        float64 `json:"max"`
	OutOfRange int64   `json:"out_of_range,omitempty"`
}

// Summary returns p50, p90, p99, p99.9 and max in ms (rounded to µs) and
// the count.
func (l *Latency) Summary() LatencySummary {
	l.mu.Lock()
	defer l.mu.Unlock()
	ms := func(us int64) float64 { return float64(us) / 1000 }
	return LatencySummary{
		Count:      l.h.TotalCount(),
		P50:        ms(l.h.ValueAtQuantile(50)),
		P90:        ms(l.h.ValueAtQuantile(90)),
		P99:        ms(l.h.ValueAtQuantile(99)),
		P999:       ms(l.h.ValueAtQuantile(99.9)),
		Max:        ms(l.h.Max()),
		OutOfRange: l.outOfRange,
	}
}

// Rate returns n events over d in msg/s, 0 when d is not positive.
func Rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}
