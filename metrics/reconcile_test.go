package metrics

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
	"time"
)

// deadLetterRun publishes 6 ids at the given ms after histStart, all acked,
// id 0 found in the dead-letter queue and id 3 in the queue; the broker was
// taken down at 260 ms and the queue's x-message-ttl is 100 ms. It returns
// the history (its trailer carrying the rule) and the ledger's own
// reconciliation.
func deadLetterRun(t *testing.T, rule bool) ([]byte, Counts, IDSets) {
	t.Helper()
	pubMS := []int{0, 50, 100, 150, 160, 250}
	var buf bytes.Buffer
	w, err := NewHistoryWriter(&buf, HistoryHeader{Prefix: "q-", Messages: len(pubMS), ConfirmMode: true, Start: histStart}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLedger("q-", len(pubMS))
	l.KeepPublishTimes()
	l.RecordTo(w)
	tr := NewConfirmTracker().ReportTo(l)
	for seq, ms := range pubMS {
		if ok, err := tr.Track(1, uint64(seq+1), seq, histStart.Add(time.Duration(ms)*time.Millisecond)); !ok || err != nil {
			t.Fatal(ok, err)
		}
		l.Published(seq, true)
		confirm(t, l, tr, 1, uint64(seq+1), true)
	}
	l.DeadLettered(l.MessageID(0))
	l.Delivered(l.MessageID(3), false)
	var tt HistoryTrailer
	if rule {
		r := l.DeadLetterRuleAt(100*time.Millisecond, []time.Time{histStart.Add(120 * time.Millisecond), histStart.Add(260 * time.Millisecond)})
		l.SetDeadLetterRule(&r)
		tt.DeadLetterRule = &r
	}
	c, ids, err := l.Reconcile(true)
	if err != nil {
		t.Fatal(err)
	}
	l.RecordTo(nil)
	if err := w.Close(tt, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), c, ids
}

// An id is lost on the dead-letter path when it was acked, delivered from
// neither queue, and its publish call + x-message-ttl is before the last
// time the broker was taken down (strictly); any other acked, undelivered
// id is lost. The replayed history applies the same rule to the same ids.
func TestDeadLetterPathRule(t *testing.T) {
	b, c, ids := deadLetterRun(t, true)
	// 1 (50+100 < 260) and 2 (100+100 < 260) on the path; 4 (160+100 =
	// 260, not before) and 5 (350) lost; 0 and 3 delivered.
	if c.Confirmed != 2 || c.LostDeadLetterPath != 2 || c.Lost != 2 || c.DeadLettered != 1 || c.ClassSum() != 6 {
		t.Fatalf("counts %+v", c)
	}
	if !reflect.DeepEqual(ids.LostDeadLetterPath, []Range{{1, 2}}) || !reflect.DeepEqual(ids.Lost, []Range{{4, 5}}) || !reflect.DeepEqual(ids.DeadLettered, []Range{{0, 0}}) {
		t.Fatalf("ids %+v", ids)
	}
	rp := replay(t, b)
	gc, gids, err := rp.Ledger.Reconcile(rp.Drained)
	if err != nil || gc != c || !reflect.DeepEqual(gids, ids) || len(rp.Inconsistencies) != 0 {
		t.Fatalf("replay %+v %+v %v %q\nrun %+v %+v", gc, gids, err, rp.Inconsistencies, c, ids)
	}
	if r := rp.Trailer.DeadLetterRule; r == nil || r.AfterPublishUS != 100_000 || !reflect.DeepEqual(r.DownUS, []int64{120_000, 260_000}) {
		t.Fatalf("trailer rule %+v", r)
	}
	// Without the rule every acked, undelivered id is lost.
	_, c, _ = deadLetterRun(t, false)
	if c.Lost != 4 || c.LostDeadLetterPath != 0 {
		t.Fatalf("no rule: %+v", c)
	}
}

// A nacked id found in the dead-letter queue (x-overflow
// reject-publish-dlx) is counted as dead-lettered and nacked.
func TestDeadLetteredNacked(t *testing.T) {
	l := NewLedger("q-", 2)
	tr := NewConfirmTracker()
	for seq := range 2 {
		if ok, err := tr.Track(1, uint64(seq+1), seq, time.Now()); !ok || err != nil {
			t.Fatal(ok, err)
		}
		l.Published(seq, true)
	}
	confirm(t, l, tr, 1, 1, true)
	confirm(t, l, tr, 1, 2, false)
	l.Delivered(l.MessageID(0), false)
	l.DeadLettered(l.MessageID(1))
	c, ids, err := l.Reconcile(true)
	if err != nil || c.Nacked != 1 || c.DeadLettered != 1 || c.DeadLetteredNacked != 1 || !reflect.DeepEqual(ids.DeadLettered, []Range{{1, 1}}) {
		t.Fatalf("%+v %+v %v", c, ids, err)
	}
}

func TestIntersectRanges(t *testing.T) {
	a := []Range{{0, 4}, {8, 8}, {10, 20}}
	b := []Range{{3, 9}, {15, 15}, {19, 30}}
	got := IntersectRanges(a, b)
	want := []Range{{3, 4}, {8, 8}, {15, 15}, {19, 20}}
	if !slices.Equal(got, want) || RangesLen(got) != 6 || IntersectRanges(a, nil) != nil {
		t.Fatalf("got %v, want %v", got, want)
	}
}
