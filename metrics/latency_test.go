package metrics

import (
	"testing"
	"time"
)

// Values below 2,048 µs are stored exactly (3 significant figures), so the
// percentiles of 1..1000 µs are the values at those ranks.
func TestLatencySummaryExact(t *testing.T) {
	l := NewLatency()
	for us := 1000; us >= 1; us-- {
		l.Record(time.Duration(us) * time.Microsecond)
	}
	l.Record(time.Hour) // beyond the histogram's range (10 min, rounded up by the HDR layout)
	want := LatencySummary{Count: 1000, P50: 0.5, P90: 0.9, P99: 0.99, P999: 0.999, Max: 1, OutOfRange: 1}
	if got := l.Summary(); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if got := NewLatency().Summary(); got != (LatencySummary{}) {
		t.Errorf("empty histogram: %+v", got)
	}
}
