package metrics

import (
	"reflect"
	"testing"
	"time"
)

// An id republished after a basic.nack was never in doubt: the in-doubt
// backlog neither gains nor loses it, whatever its confirm, while an
// in-doubt id republished and then nacked leaves it once.
func TestNackRepublishKeepsTheBacklog(t *testing.T) {
	l := NewLedger("a-", 3)
	s := NewSeries(histStart, time.Second)
	s.SetClock(func() time.Time { return histStart })
	l.Attach(s)
	backlog := func(want int, when string) {
		t.Helper()
		if got := s.Totals().Backlog; got != want {
			t.Fatalf("%s: backlog %d, want %d", when, got, want)
		}
	}
	settle := func(seq int, ack bool) {
		t.Helper()
		if err := l.Settle(seq, ack); err != nil {
			t.Fatal(err)
		}
	}
	// 0: nacked, republished, acked. 1: nacked, republished, in doubt,
	// republished, nacked. 2: in doubt, republished, nacked, republished,
	// acked.
	l.Published(0, true)
	settle(0, false)
	l.Published(0, true)
	backlog(0, "0 republished after its nack")
	settle(0, true)
	backlog(0, "0 acked")
	l.Published(1, true)
	settle(1, false)
	l.Published(1, true)
	l.MarkInDoubt(1)
	backlog(1, "1 in doubt after its nack")
	l.Published(1, true)
	backlog(1, "1 republished")
	settle(1, false)
	backlog(0, "1 nacked")
	l.Published(2, true)
	l.MarkInDoubt(2)
	l.Published(2, true)
	settle(2, false)
	backlog(0, "2 nacked after its republish")
	l.Published(2, true)
	settle(2, true)
	backlog(0, "2 acked")
	if tot := s.Totals(); tot.InFlight != 0 || tot.Nacked != 4 || tot.Acked != 2 || tot.Published != 8 {
		t.Fatalf("totals %+v, want in flight 0, nacked 4, acked 2, published 8", tot)
	}
	c, ids, err := l.Reconcile(true)
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{Sent: 3, Lost: 2, Nacked: 1, WentNacked: 3, WentInDoubt: 2, Republished: 5}
	if c != want {
		t.Fatalf("counts\n got %+v\nwant %+v", c, want)
	}
	if !reflect.DeepEqual(ids.WentNacked, []Range{{0, 2}}) || !reflect.DeepEqual(ids.WentInDoubt, []Range{{1, 2}}) || !reflect.DeepEqual(ids.Nacked, []Range{{1, 1}}) {
		t.Fatalf("ids %+v", ids)
	}
}

// deletedRun: 6 ids on a queue deleted mid-burst. Before the delete: 0 and
// 1 acked, 2 nacked, 3 in doubt, 4 in flight (its confirm comes after the
// delete), 5 not yet published. After it: 3 republished and acked, 5
// published and acked. Delivered by the drain: 0 (resurrected), 2
// (resurrected, although nacked), 3 twice (the republished copy and a
// resurrected one: a duplicate, not resurrected, since it was published
// again), 4 and 5 (published, or still awaiting its confirm, after).
func deletedRun(t testing.TB) func(l *Ledger, tr *ConfirmTracker) {
	return func(l *Ledger, tr *ConfirmTracker) {
		for seq := range 5 {
			pubConfirm(t, l, tr, 1, uint64(seq+1), seq)
		}
		confirm(t, l, tr, 1, 1, true)
		confirm(t, l, tr, 1, 2, true)
		confirm(t, l, tr, 1, 3, false)
		if p, ok := tr.Settle(1, 4); !ok || !l.MarkInDoubt(p.Seq) {
			t.Fatal("tag 4")
		}
		l.QueueDeleted(false)
		confirm(t, l, tr, 1, 5, true)
		pubConfirm(t, l, tr, 2, 1, 3)
		pubConfirm(t, l, tr, 2, 2, 5)
		confirm(t, l, tr, 2, 1, true)
		confirm(t, l, tr, 2, 2, true)
		for _, d := range []struct{ seq, attempt int }{{0, 1}, {2, 1}, {3, 1}, {3, 2}, {4, 1}, {5, 1}} {
			l.DeliveredAttempt(l.MessageID(d.seq), false, d.attempt)
		}
	}
}

func TestQueueDeletedResurrected(t *testing.T) {
	b, c, ids := record(t, 6, true, deletedRun(t))
	want := Counts{Sent: 6, Resurrected: 2, Confirmed: 3, Lost: 1, WentNacked: 1, WentInDoubt: 1, Republished: 1,
		Delivered: 5, Deliveries: 6, Duplicates: 1, DuplicatesFromRepublish: 1}
	if c != want {
		t.Fatalf("counts\n got %+v\nwant %+v", c, want)
	}
	if !reflect.DeepEqual(ids.Resurrected, []Range{{0, 0}, {2, 2}}) || !reflect.DeepEqual(ids.Lost, []Range{{1, 1}}) || len(ids.Nacked) != 0 {
		t.Fatalf("ids %+v", ids)
	}
	rp := replay(t, b)
	if len(rp.Inconsistencies) != 0 {
		t.Fatalf("inconsistencies: %q", rp.Inconsistencies)
	}
	gc, gids, err := rp.Ledger.Reconcile(rp.Drained)
	if err != nil || gc != c || !reflect.DeepEqual(gids, ids) {
		t.Fatalf("replay (%v)\n%+v %+v\nrun\n%+v %+v", err, gc, gids, c, ids)
	}
}

// The last delete counts: an id published between two deletes and
// delivered came back from the second; without a delete nothing is
// resurrected.
func TestQueueDeletedTwice(t *testing.T) {
	l := NewLedger("a-", 2)
	l.Published(0, true)
	if err := l.Settle(0, true); err != nil {
		t.Fatal(err)
	}
	l.QueueDeleted(false)
	l.Published(1, true)
	if err := l.Settle(1, true); err != nil {
		t.Fatal(err)
	}
	l.QueueDeleted(false)
	l.Delivered("a-1", false)
	c, ids, err := l.Reconcile(true)
	if err != nil || c.Resurrected != 1 || c.Lost != 1 || !reflect.DeepEqual(ids.Resurrected, []Range{{1, 1}}) {
		t.Fatalf("%v: resurrected %d %v, lost %d; want 1 [1], 1", err, c.Resurrected, ids.Resurrected, c.Lost)
	}
	l2 := NewLedger("a-", 1)
	l2.Published(0, true)
	if err := l2.Settle(0, true); err != nil {
		t.Fatal(err)
	}
	l2.Delivered("a-0", false)
	if c, _, _ := l2.Reconcile(true); c.Resurrected != 0 || c.Confirmed != 1 {
		t.Fatalf("no delete: %+v", c)
	}
}

// Mid-burst, only what the broker had answered counts as deleted with the
// queue: an in-doubt id and a fire-and-forget one may still reach the
// queue declared again. After the burst every attempt does.
func TestQueueDeletedMidBurstOrAfter(t *testing.T) {
	for _, tc := range []struct {
		burstOver bool
		want      Counts
	}{
		{false, Counts{Sent: 3, Resurrected: 1, InDoubt: 1, InDoubtDelivered: 1, WentInDoubt: 1, UnconfirmedDelivered: 1, Delivered: 3, Deliveries: 3}},
		{true, Counts{Sent: 3, Resurrected: 3, WentInDoubt: 1, Delivered: 3, Deliveries: 3}},
	} {
		l := NewLedger("a-", 3)
		l.Published(0, true)
		if err := l.Settle(0, true); err != nil {
			t.Fatal(err)
		}
		l.Published(1, true)
		l.MarkInDoubt(1)
		l.Published(2, false)
		l.QueueDeleted(tc.burstOver)
		for seq := range 3 {
			l.Delivered(l.MessageID(seq), false)
		}
		if c, _, err := l.Reconcile(true); err != nil || c != tc.want {
			t.Errorf("burst over %v: %v\n got %+v\nwant %+v", tc.burstOver, err, c, tc.want)
		}
	}
}
