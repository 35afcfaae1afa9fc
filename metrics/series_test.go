package metrics

import (
	"reflect"
	"testing"
	"time"
)

// A ledger with a series attached counts each event in the bucket of its
// time, and the gauges at each bucket's end.
func TestSeriesBuckets(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := NewSeries(t0, 0) // default bucket: 250 ms
	clock := t0
	s.now = func() time.Time { return clock }
	l := NewLedger("s-", 5)
	l.Attach(s)
	at := func(ms int, steps ...step) {
		clock = t0.Add(time.Duration(ms) * time.Millisecond)
		apply(t, l, steps)
	}
	at(10, step{"pub", 0}, step{"pub", 1}, step{"pub", 2})
	at(100, step{"ack", 0})
	at(260, step{"ret", 1}, step{"ack", 1})
	at(300, step{"doubt", 2})
	if got := s.Totals(); got.InFlight != 0 || got.Backlog != 1 || got.Published != 3 || got.Acked != 2 {
		t.Fatalf("totals at 300 ms: %+v", got)
	}
	at(600, step{"pub", 2}) // republish: still in the backlog until confirmed
	at(760, step{"ack", 2})
	at(800, step{"deliver", 0})
	l.Delivered("elsewhere-1", false) // not ours: not counted
	at(900, step{"pubff", 3})         // no confirm mode: not in flight

	d := s.Sample(t0.Add(time.Second))
	want := SeriesData{
		BucketMS:   250,
		Published:  []int{3, 0, 1, 1},
		Acked:      []int{1, 1, 0, 1},
		Nacked:     []int{0, 0, 0, 0},
		Returned:   []int{0, 1, 0, 0},
		Delivered:  []int{0, 0, 0, 1},
		InFlight:   []int{2, 0, 1, 0},
		Reconnects: []int{0, 0, 0, 0},
		Broker:     []BrokerState{StateUp, StateUp, StateUp, StateUp},
		// The republish of id 2 at 600 ms.
		Republished: []int{0, 0, 1, 0},
	}
	if !reflect.DeepEqual(d, want) {
		t.Fatalf("sample:\n got %+v\nwant %+v", d, want)
	}

	d.Mark([]StateSpan{
		{FromMS: 100, ToMS: 250, State: StateBlocked}, // ends on a boundary: bucket 0 only
		{FromMS: 300, ToMS: 760, State: StateDown},
		{FromMS: 760, ToMS: 800, State: StatePaused}, // bucket 3 was also down: down wins
	}, []float64{600, 5000}) // past the end: clipped to the last bucket
	if want := []BrokerState{StateBlocked, StateDown, StateDown, StateDown}; !reflect.DeepEqual(d.Broker, want) {
		t.Errorf("broker %v, want %v", d.Broker, want)
	}
	// The exact spans, for charts: the 300 ms start of the down span is kept
	// although bucket 1 (250–500 ms) is down as a whole.
	if want := []StateSpan{{100, 250, StateBlocked}, {300, 760, StateDown}, {760, 800, StatePaused}}; !reflect.DeepEqual(d.States, want) {
		t.Errorf("states %+v, want %+v", d.States, want)
	}
	if want := []int{0, 0, 1, 1}; !reflect.DeepEqual(d.Reconnects, want) {
		t.Errorf("reconnects %v, want %v", d.Reconnects, want)
	}

	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	for _, c := range []struct {
		after, want int
		ok          bool
	}{{200, 200, true}, {300, 760, true}, {400, 760, true}, {900, 900, true}} {
		got, ok := s.BacklogClearedAfter(ms(c.after))
		if ok != c.ok || !got.Equal(ms(c.want)) {
			t.Errorf("backlog cleared after %d ms: %v %v, want %d ms", c.after, got.Sub(t0), ok, c.want)
		}
	}
	// A nack settles too; an id left in doubt keeps the backlog open.
	at(1100, step{"pub", 4}, step{"nack", 4})
	if got := s.Totals(); got.Nacked != 1 || got.InFlight != 0 || got.Backlog != 0 {
		t.Errorf("totals after the nack: %+v", got)
	}
	l2 := NewLedger("t-", 1)
	s2 := NewSeries(t0, time.Second)
	s2.now = func() time.Time { return clock }
	l2.Attach(s2)
	apply(t, l2, []step{{"pub", 0}, {"fail", 0}})
	if _, ok := s2.BacklogClearedAfter(clock); ok {
		t.Error("a failed publish never republished: the backlog never clears")
	}
	if d := s2.Sample(t0); d.Len() != 2 || d.Published[1] != 1 || d.InFlight[1] != 0 {
		t.Errorf("second series %+v", d)
	}
}

// Sent and Received count distinct ids: a republish adds to Published only,
// a duplicate or a redelivery to Delivered only.
func TestSeriesTotalsDistinct(t *testing.T) {
	s := NewSeries(time.Now(), 0)
	l := NewLedger("d-", 3)
	l.Attach(s)
	l.Published(0, true)
	l.Published(1, true)
	l.MarkInDoubt(0)
	l.Published(0, true) // republish of an in-doubt id
	l.Published(2, false)
	l.Delivered("d-0", false)
	l.Delivered("d-0", false) // duplicate
	l.Delivered("d-0", true)  // redelivery
	l.DeadLettered("d-1")
	l.Delivered("d-1", false) // first from the work queue, but already seen dead-lettered
	got := s.Totals()
	if got.Published != 4 || got.Sent != 3 || got.Delivered != 5 || got.Received != 2 {
		t.Errorf("totals %+v: want published 4, sent 3, delivered 5, received 2", got)
	}
}

// A watcher sees each event recorded after Watch, in full, and none before.
func TestTimelineWatch(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tl := NewTimeline(t0)
	tl.AddAt(t0, EvBurstStart, "")
	var seen []Event
	tl.Watch(func(e Event) { seen = append(seen, e) })
	tl.AddAt(t0.Add(1500*time.Millisecond), EvTrigger, "kill (50% published)")
	tl.Record(Event{At: t0.Add(2 * time.Second), Kind: EvFault, Action: "kill", Target: "broker"})
	tl.Watch(nil)
	tl.AddAt(t0.Add(3*time.Second), EvBrokerReady, "")
	want := []Event{
		{At: t0.Add(1500 * time.Millisecond), AtMS: 1500, Kind: EvTrigger, Detail: "kill (50% published)"},
		{At: t0.Add(2 * time.Second), AtMS: 2000, Kind: EvFault, Action: "kill", Target: "broker"},
	}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("seen %+v\nwant %+v", seen, want)
	}
	if n := len(tl.Events()); n != 4 {
		t.Errorf("timeline holds %d events, want 4", n)
	}
}

// Coarsen sums counts, keeps the in-flight gauge at each group's end and
// the worst broker state of each group.
func TestSeriesCoarsen(t *testing.T) {
	d := &SeriesData{BucketMS: 10,
		Published:  []int{1, 2, 3, 4, 5},
		Acked:      []int{1, 1, 1, 1, 1},
		Nacked:     []int{0, 0, 1, 0, 0},
		Returned:   []int{0, 0, 0, 0, 1},
		Delivered:  []int{0, 1, 0, 1, 0},
		InFlight:   []int{7, 8, 9, 10, 11},
		Reconnects: []int{0, 1, 0, 0, 0},
		Broker:     []BrokerState{StateUp, StatePaused, StateDown, StateBlocked, StateUp},
		States:     []StateSpan{{FromMS: 12, ToMS: 31, State: StateDown}},
	}
	if c, f := d.Coarsen(5); c != d || f != 1 {
		t.Fatalf("a series that fits was regrouped: factor %d", f)
	}
	c, f := d.Coarsen(2)
	want := &SeriesData{BucketMS: 30,
		Published:  []int{6, 9},
		Acked:      []int{3, 2},
		Nacked:     []int{1, 0},
		Returned:   []int{0, 1},
		Delivered:  []int{1, 1},
		InFlight:   []int{9, 11},
		Reconnects: []int{1, 0},
		Broker:     []BrokerState{StateDown, StateBlocked},
		States:     d.States,
	}
	if f != 3 || !reflect.DeepEqual(c, want) {
		t.Fatalf("factor %d\n got %+v\nwant %+v", f, c, want)
	}
}
