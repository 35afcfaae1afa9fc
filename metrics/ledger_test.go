package metrics

import (
	"testing"
	"time"
)

// step is one thing that happens to sequence number seq.
type step struct {
	op  string // pub, pubff, fail, failff, ack, nack, ret, doubt, deliver
	seq int
}

func apply(t *testing.T, l *Ledger, steps []step) {
	t.Helper()
	for _, s := range steps {
		switch s.op {
		case "pub":
			l.Published(s.seq, true)
		case "pubff":
			l.Published(s.seq, false)
		case "fail":
			l.PublishFailed(s.seq, true)
		case "failff":
			l.PublishFailed(s.seq, false)
		case "ack", "nack":
			if err := l.Settle(s.seq, s.op == "ack"); err != nil {
				t.Fatal(err)
			}
		case "ret":
			l.Returned(s.seq)
		case "doubt":
			l.MarkInDoubt(s.seq)
		case "deliver":
			l.Delivered(l.MessageID(s.seq), false)
		default:
			t.Fatalf("bad op %q", s.op)
		}
	}
}

func TestReconcileClasses(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
		want  Counts
	}{
		{"acked and delivered is confirmed",
			[]step{{"pub", 0}, {"ack", 0}, {"deliver", 0}},
			Counts{Sent: 1, Confirmed: 1, Delivered: 1, Deliveries: 1}},
		{"acked never delivered is lost",
			[]step{{"pub", 0}, {"ack", 0}},
			Counts{Sent: 1, Lost: 1}},
		{"nacked",
			[]step{{"pub", 0}, {"nack", 0}},
			Counts{Sent: 1, Nacked: 1, WentNacked: 1}},
		{"republished after a nack and acked ends confirmed; both copies delivered: one duplicate from the republish",
			[]step{{"pub", 0}, {"nack", 0}, {"pub", 0}, {"ack", 0}, {"deliver", 0}, {"deliver", 0}},
			Counts{Sent: 1, Confirmed: 1, WentNacked: 1, Republished: 1, Delivered: 1, Deliveries: 2, Duplicates: 1, DuplicatesFromRepublish: 1}},
		{"republished after a nack and nacked again stays nacked",
			[]step{{"pub", 0}, {"nack", 0}, {"pub", 0}, {"nack", 0}, {"deliver", 0}},
			Counts{Sent: 1, Nacked: 1, WentNacked: 1, Republished: 1, Delivered: 1, Deliveries: 1}},
		{"republished after a nack, then in doubt",
			[]step{{"pub", 0}, {"nack", 0}, {"pub", 0}, {"doubt", 0}},
			Counts{Sent: 1, InDoubt: 1, WentInDoubt: 1, WentNacked: 1, Republished: 1}},
		{"return before ack is returned, not confirmed",
			[]step{{"pub", 0}, {"ret", 0}, {"ack", 0}},
			Counts{Sent: 1, Returned: 1}},
		{"channel closed before confirm is in doubt, not nacked",
			[]step{{"pub", 0}, {"doubt", 0}},
			Counts{Sent: 1, InDoubt: 1, WentInDoubt: 1}},
		{"in doubt but delivered anyway",
			[]step{{"pub", 0}, {"doubt", 0}, {"deliver", 0}},
			Counts{Sent: 1, InDoubt: 1, InDoubtDelivered: 1, WentInDoubt: 1, Delivered: 1, Deliveries: 1}},
		{"still in flight at the end counts as in doubt",
			[]step{{"pub", 0}},
			Counts{Sent: 1, InDoubt: 1}},
		{"republished after doubt, both copies delivered: one duplicate explained by the republish",
			[]step{{"pub", 0}, {"doubt", 0}, {"pub", 0}, {"ack", 0}, {"deliver", 0}, {"deliver", 0}},
			Counts{Sent: 1, Confirmed: 1, WentInDoubt: 1, Republished: 1, Delivered: 1, Deliveries: 2, Duplicates: 1, DuplicatesFromRepublish: 1}},
		{"duplicate without a republish is unexplained",
			[]step{{"pub", 0}, {"ack", 0}, {"deliver", 0}, {"deliver", 0}},
			Counts{Sent: 1, Confirmed: 1, Delivered: 1, Deliveries: 2, Duplicates: 1}},
		{"failed publish call in confirm mode is in doubt",
			[]step{{"pub", 0}, {"fail", 0}},
			Counts{Sent: 1, InDoubt: 1, WentInDoubt: 1, PublishErrors: 1}},
		{"fire-and-forget delivered and missing",
			[]step{{"pubff", 0}, {"pubff", 1}, {"deliver", 0}},
			Counts{Sent: 2, UnconfirmedDelivered: 1, UnconfirmedMissing: 1, Delivered: 1, Deliveries: 1}},
		{"fire-and-forget failed call is not sent until it succeeds",
			[]step{{"failff", 0}, {"pubff", 0}, {"deliver", 0}},
			Counts{Sent: 1, UnconfirmedDelivered: 1, PublishErrors: 1, Delivered: 1, Deliveries: 1}},
		{"fire-and-forget returned",
			[]step{{"pubff", 0}, {"ret", 0}},
			Counts{Sent: 1, Returned: 1}},
		{"never published ids are not counted",
			[]step{},
			Counts{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLedger("r1-", 3)
			apply(t, l, tt.steps)
			got, _, err := l.Reconcile(true)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("counts\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestUnexpectedDeliveries(t *testing.T) {
	l := NewLedger("r1-", 10)
	l.Published(3, true)
	for _, id := range []string{"other-3", "r1-10", "r1-03", "r1--1", "", "r1-4", "r1-3", ProbeID(1, 2)} {
		l.Delivered(id, false)
	}
	l.DeadLettered(ProbeID(2, 1))
	c, _, err := l.Reconcile(true)
	if err != nil {
		t.Fatal(err)
	}
	// Six ids are foreign, out of range, non-canonical or never published; r1-3 was published.
	// A probe is no order: neither unexpected nor delivered.
	if c.Unexpected != 6 || c.Deliveries != 1 {
		t.Errorf("unexpected=%d deliveries=%d, want 6 and 1", c.Unexpected, c.Deliveries)
	}
}

func TestRedeliveryIsNotADuplicate(t *testing.T) {
	l := NewLedger("r-", 2)
	l.Published(0, true)
	l.Published(1, true)
	_ = l.Settle(0, true)
	_ = l.Settle(1, true)
	l.Delivered("r-0", false)
	l.Delivered("r-0", true) // handed out again after a consumer channel closed
	l.Delivered("r-1", true) // first sight of an id counts as its delivery, flag or not
	c, _, _ := l.Reconcile(true)
	if c.Duplicates != 0 || c.Redeliveries != 1 || c.Confirmed != 2 || c.Deliveries != 2 {
		t.Fatalf("%+v", c)
	}
}

// A basic.return of an earlier attempt says nothing of a republished one: a
// republish that is acked and never delivered is lost, not returned.
func TestReturnOfAnEarlierAttemptDoesNotHideALoss(t *testing.T) {
	l := NewLedger("r-", 1)
	l.Published(0, true)
	l.Returned(0)
	l.MarkInDoubt(0) // channel died before the ack
	l.Published(0, true)
	_ = l.Settle(0, true)
	c, _, _ := l.Reconcile(true)
	if c.Lost != 1 || c.Returned != 0 {
		t.Fatalf("%+v", c)
	}
}

func TestUndrainedIsUnverifiedNeverLost(t *testing.T) {
	l := NewLedger("r-", 3)
	l.Published(0, true)
	_ = l.Settle(0, true)
	l.Published(1, false)
	l.Published(2, true)
	_ = l.Settle(2, true)
	l.Delivered("r-2", false)
	c, ids, _ := l.Reconcile(false)
	if c.Lost != 0 || c.UnconfirmedMissing != 0 || c.Unverified != 2 || c.Confirmed != 1 || len(ids.Unverified) != 1 || ids.Unverified[0] != (Range{0, 1}) {
		t.Fatalf("%+v %+v", c, ids)
	}
}

func TestDeadlines(t *testing.T) {
	l := NewLedger("r-", 3)
	if !l.MarkNotPublished(0) {
		t.Fatal("never attempted: must be markable as not published")
	}
	l.Published(1, true)
	if l.MarkNotPublished(1) {
		t.Fatal("an attempted id is pending, never 'not published'")
	}
	l.MarkPastDeadline(1)
	l.MarkPastDeadline(2) // never attempted: not pending
	_ = l.Settle(1, true)
	l.Delivered("r-1", false)
	c, ids, err := l.Reconcile(true)
	if err != nil || c.Sent != 1 || c.NotPublished != 1 || c.PendingAtDeadline != 1 || c.Confirmed != 1 || len(ids.NotPublished) != 1 || ids.NotPublished[0] != (Range{0, 0}) {
		t.Fatalf("%+v %+v %v", c, ids, err)
	}
}

func TestSettleTwiceIsABug(t *testing.T) {
	l := NewLedger("r-", 1)
	l.Published(0, true)
	if err := l.Settle(0, true); err != nil {
		t.Fatal(err)
	}
	if err := l.Settle(0, true); err == nil {
		t.Fatal("second confirm of the same attempt accepted")
	}
}

func TestRangesAndIDSets(t *testing.T) {
	l := NewLedger("r-", 10)
	for seq := range 10 {
		l.Published(seq, false)
	}
	for _, seq := range []int{0, 1, 2, 5, 9} {
		l.Delivered(l.MessageID(seq), false)
	}
	c, ids, err := l.Reconcile(true)
	if err != nil {
		t.Fatal(err)
	}
	want := []Range{{3, 4}, {6, 8}}
	if len(ids.UnconfirmedMissing) != 2 || ids.UnconfirmedMissing[0] != want[0] || ids.UnconfirmedMissing[1] != want[1] {
		t.Errorf("missing ranges %v, want %v", ids.UnconfirmedMissing, want)
	}
	if c.UnconfirmedMissing != 5 || ids.UnconfirmedMissing[1].String() != "6-8" {
		t.Errorf("missing=%d, range %q", c.UnconfirmedMissing, ids.UnconfirmedMissing[1])
	}
}

func TestAllConfirmedDelivered(t *testing.T) {
	l := NewLedger("r-", 3)
	l.Published(0, true)
	l.Published(1, true)
	_ = l.Settle(0, true)
	l.MarkInDoubt(1)
	if l.AllConfirmedDelivered() {
		t.Fatal("acked id 0 not yet delivered")
	}
	l.Delivered(l.MessageID(0), false)
	if !l.AllConfirmedDelivered() {
		t.Fatal("in-doubt id 1 must not hold the drain")
	}
}

func TestConfirmTrackerEpochs(t *testing.T) {
	tr := NewConfirmTracker()
	now := time.Now()
	mustTrack := func(e Epoch, tag uint64, seq int) {
		t.Helper()
		ok, err := tr.Track(e, tag, seq, now)
		if !ok || err != nil {
			t.Fatalf("track %d/%d: %v %v", e, tag, ok, err)
		}
	}
	mustTrack(1, 1, 100)
	mustTrack(1, 2, 101)
	mustTrack(1, 3, 102)
	// Tags restart at 1 on a new channel: the same tag on epoch 2 is another message.
	mustTrack(2, 1, 200)
	if _, err := tr.Track(1, 2, 999, now); err == nil {
		t.Fatal("tag tracked twice on one epoch")
	}
	if p, ok := tr.Settle(1, 2); !ok || p.Seq != 101 {
		t.Fatalf("settle 1/2 = %v %v", p, ok)
	}
	if _, ok := tr.Settle(1, 2); ok {
		t.Fatal("tag settled twice")
	}
	if _, ok := tr.Settle(1, 0); ok {
		t.Fatal("bogus tag 0 settled")
	}
	pend := tr.CloseEpoch(1)
	if len(pend) != 2 || pend[0].Seq != 100 || pend[1].Seq != 102 {
		t.Fatalf("pending on close = %+v", pend)
	}
	if ok, _ := tr.Track(1, 4, 103, now); ok {
		t.Fatal("track on a closed epoch accepted")
	}
	if _, ok := tr.Settle(1, 1); ok {
		t.Fatal("confirm after close settled an in-doubt tag")
	}
	if tr.InFlight() != 1 {
		t.Fatalf("in flight %d, want 1 (epoch 2)", tr.InFlight())
	}
	if p, ok := tr.Settle(2, 1); !ok || p.Seq != 200 {
		t.Fatalf("settle 2/1 = %v %v", p, ok)
	}
}

func TestLatencySummary(t *testing.T) {
	l := NewLatency()
	for i := 1; i <= 100; i++ {
		l.Record(time.Duration(i) * time.Millisecond)
	}
	s := l.Summary()
	if s.Count != 100 || s.P50 < 49.9 || s.P50 > 50.1 || s.P99 < 98.9 || s.P99 > 99.1 || s.Max < 99.9 || s.Max > 100.1 {
		t.Errorf("summary %+v", s)
	}
	l.Record(time.Hour)
	if l.Summary().OutOfRange != 1 {
		t.Error("an hour is out of range and must be counted")
	}
}

// A consumer's retries and the dead-letter copy are accounted apart from
// duplicates: a message retried 3 times (4 deliveries from the work queue,
// 3 retry copies, then parked) and found once in the dead-letter queue
// is confirmed and dead-lettered with 3 retry deliveries and no duplicate; a
// broker-dead-lettered message delivered once and found in the dead-letter
// queue is neither; a second dead-letter copy of one id is a duplicate.
func TestLedgerRetriesAndDeadLettersAreNotDuplicates(t *testing.T) {
	l := NewLedger("r-", 3)
	for seq := range 3 {
		l.Published(seq, true)
		if err := l.Settle(seq, true); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		l.Delivered("r-0", false)
		l.Retried("r-0")
	}
	l.Delivered("r-0", false)
	l.Parked("r-0")
	l.DeadLettered("r-0")
	l.Delivered("r-1", false)
	l.DeadLettered("r-1")
	l.DeadLettered("r-2")
	l.DeadLettered("r-2")
	l.DeadLettered("other-1")
	c, ids, err := l.Reconcile(true)
	if err != nil {
		t.Fatal(err)
	}
	want := Counts{Sent: 3, Confirmed: 3, Delivered: 3, Deliveries: 4 + 1 + 2 + 2, DeadLettered: 3,
		RetryDeliveries: 3, Duplicates: 1, Unexpected: 1}
	if c != want {
		t.Fatalf("counts\n got %+v\nwant %+v", c, want)
	}
	if len(ids.Duplicated) != 1 || ids.Duplicated[0] != (Range{2, 2}) {
		t.Fatalf("duplicated %v", ids.Duplicated)
	}
}

// Two publisher copies of one id (a republish after in-doubt): each copy's
// retry chain is explained, the one extra copy is one duplicate whether it
// shows in the work queue, the dead-letter queue or both.
func TestLedgerExtraCopyCountsOnceAcrossWorkAndDeadLetterQueues(t *testing.T) {
	for name, tc := range map[string]struct {
		deliver func(l *Ledger)
		retry   int
	}{
		"client retries, both chains parked": {func(l *Ledger) {
			for range 2 { // two chains of 2 retries + park
				for range 2 {
					l.Delivered("r-0", false)
					l.Retried("r-0")
				}
				l.Delivered("r-0", false)
				l.Parked("r-0")
				l.DeadLettered("r-0")
			}
		}, 4},
		"broker dead-lettering (reject)": {func(l *Ledger) {
			l.Delivered("r-0", false)
			l.Delivered("r-0", false)
			l.DeadLettered("r-0")
			l.DeadLettered("r-0")
		}, 0},
		"work queue only": {func(l *Ledger) {
			l.Delivered("r-0", false)
			l.Delivered("r-0", false)
		}, 0},
	} {
		l := NewLedger("r-", 1)
		l.Published(0, true)
		l.MarkInDoubt(0)
		l.Published(0, true) // republished
		if err := l.Settle(0, true); err != nil {
			t.Fatal(err)
		}
		tc.deliver(l)
		c, _, err := l.Reconcile(true)
		if err != nil {
			t.Fatal(err)
		}
		if c.Duplicates != 1 || c.DuplicatesFromRepublish != 1 || c.RetryDeliveries != tc.retry || c.Lost != 0 {
			t.Errorf("%s: duplicates %d (from republish %d), retry deliveries %d (want 1, 1, %d)", name, c.Duplicates, c.DuplicatesFromRepublish, c.RetryDeliveries, tc.retry)
		}
	}
}

// The redelivered flag belongs to a copy: a republished copy (attempt 2)
// first seen flagged redelivered (the broker requeued it from a consumer's
// prefetch) is a duplicate; the first copy handed out again is a
// redelivery. Without the attempt, the flag alone decides.
func TestRedeliveredFlagIsPerPublishAttempt(t *testing.T) {
	l := NewLedger("a-", 1)
	l.Published(0, true)
	l.MarkInDoubt(0)
	l.Published(0, true)
	if err := l.Settle(0, true); err != nil {
		t.Fatal(err)
	}
	l.DeliveredAttempt("a-0", false, 1)
	l.DeliveredAttempt("a-0", true, 2) // never seen: a duplicate, not a redelivery
	l.DeliveredAttempt("a-0", true, 1) // seen: a redelivery
	c, _, err := l.Reconcile(true)
	if err != nil {
		t.Fatal(err)
	}
	if c.Duplicates != 1 || c.DuplicatesFromRepublish != 1 || c.Redeliveries != 1 || c.Deliveries != 2 {
		t.Fatalf("duplicates %d (from republish %d), redeliveries %d, deliveries %d; want 1, 1, 1, 2", c.Duplicates, c.DuplicatesFromRepublish, c.Redeliveries, c.Deliveries)
	}
	l2 := NewLedger("a-", 1)
	l2.Published(0, true)
	l2.Delivered("a-0", false)
	l2.Delivered("a-0", true)
	if c, _, _ := l2.Reconcile(true); c.Redeliveries != 1 || c.Duplicates != 0 {
		t.Fatalf("unknown attempt: redeliveries %d duplicates %d", c.Redeliveries, c.Duplicates)
	}
}

// A copy published while the id is in flight leaves one more confirm to
// come, and only that one: a third confirm is still a bookkeeping bug. The
// in-doubt backlog holds the id from its copy until it settles.
func TestCopyInFlightSettlesOnceAndClosesOnce(t *testing.T) {
	l := NewLedger("a-", 1)
	s := NewSeries(histStart, time.Second)
	s.SetClock(func() time.Time { return histStart })
	l.Attach(s)
	l.Published(0, true)
	l.Published(0, true)
	if tot := s.Totals(); tot.InFlight != 1 || tot.Backlog != 1 {
		t.Fatalf("after the copy: in flight %d backlog %d, want 1 1", tot.InFlight, tot.Backlog)
	}
	if settled, err := l.SettleAttempt(0, 1, true); !settled || err != nil {
		t.Fatal(settled, err)
	}
	if settled, err := l.SettleAttempt(0, 2, true); settled || err != nil {
		t.Fatal(settled, err)
	}
	if _, err := l.SettleAttempt(0, 2, true); err == nil {
		t.Fatal("a third confirm for two attempts was accepted")
	}
	if l.MarkInDoubt(0) || l.Outcome(0) != Acked {
		t.Fatalf("in doubt after its confirm: outcome %s", l.Outcome(0))
	}
	if tot := s.Totals(); tot.InFlight != 0 || tot.Backlog != 0 {
		t.Fatalf("settled: in flight %d backlog %d, want 0 0", tot.InFlight, tot.Backlog)
	}
	c, _, err := l.Reconcile(true)
	if err != nil || c.LateConfirms != 1 || c.Republished != 1 || c.WentInDoubt != 0 {
		t.Fatalf("%v: late %d republished %d went in doubt %d, want 1 1 0", err, c.LateConfirms, c.Republished, c.WentInDoubt)
	}
}

// Pending counts ids awaiting their confirm, and those plus the in-doubt.
func TestLedgerPending(t *testing.T) {
	l := NewLedger("p-", 4)
	for seq := range 3 {
		l.Published(seq, true)
	}
	if err := l.Settle(0, true); err != nil {
		t.Fatal(err)
	}
	l.MarkInDoubt(1)
	if inFlight, unsettled := l.Pending(); inFlight != 1 || unsettled != 2 {
		t.Errorf("pending %d, %d; want 1 in flight, 2 unsettled", inFlight, unsettled)
	}
}
