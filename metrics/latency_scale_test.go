package metrics

import (
	"math"
	"testing"
	"time"
)

// At 10 million samples the histogram keeps its precision: count exact,
// every percentile within 3 significant figures (0.1%) of the exact one,
// nothing out of range. The samples are the µs values 1,000–100,999, each
// 100 times (a permutation per round, so the order is not sorted); the
// exact p-th percentile is the value at rank ceil(p% × n).
func TestLatencyPrecisionAtTenMillion(t *testing.T) {
	const distinct, rounds = 100000, 100
	l := NewLatency()
	for r := range rounds {
		for i := range distinct {
			l.Record(time.Duration(1000+(i*7919+r)%distinct) * time.Microsecond)
		}
	}
	s := l.Summary()
	if s.Count != distinct*rounds || s.OutOfRange != 0 {
		t.Fatalf("count %d, out of range %d", s.Count, s.OutOfRange)
	}
	exact := func(p float64) float64 { // ms
		rank := int64(math.Ceil(p / 100 * distinct * rounds))
		return float64(1000+(rank-1)/rounds) / 1000
	}
	for _, c := range []struct {
		name string
		p    float64
		got  float64
	}{{"p50", 50, s.P50}, {"p90", 90, s.P90}, {"p99", 99, s.P99}, {"p99.9", 99.9, s.P999}, {"max", 100, s.Max}} {
		want := exact(c.p)
		if math.Abs(c.got-want) > want*0.001 {
			t.Errorf("%s: %.3f ms, exact %.3f ms: more than 0.1%% off", c.name, c.got, want)
		}
	}
}
