package metrics

import (
	"testing"
	"time"
)

// FuzzLedgerInvariants drives the confirm tracker and the ledger the way the
// publisher does, with a random sequence of events (publish, ack, nack with
// or without a republish, multiple ack, return, channel close, reconnect
// with republish, delivery, redelivery, queue deleted), and checks the
// invariants after each run:
//   - the classes add up to the number sent (Reconcile's own check);
//   - every id the broker acked and the drain never delivered is lost;
//   - no id is in two classes (the listed ranges are disjoint);
//   - a (epoch, tag) settles at most once;
//   - every republished id went in doubt or was nacked;
//   - the series' gauges: in flight is the ids awaiting a confirm, the
//     in-doubt backlog the ids in doubt or republished after it and not
//     settled since.
func FuzzLedgerInvariants(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8})
	f.Add([]byte{0, 0, 0, 0, 5, 6, 0, 0, 1, 7, 7, 8})
	f.Add([]byte{0, 3, 0, 1, 4, 0, 2, 5, 6, 0, 1, 7})
	f.Fuzz(func(t *testing.T, ops []byte) {
		const n = 16
		l := NewLedger("f-", n)
		series := NewSeries(histStart, time.Second)
		series.SetClock(func() time.Time { return histStart })
		l.Attach(series)
		backlog := map[int]bool{} // the model of the in-doubt backlog
		tr := NewConfirmTracker()
		epoch := Epoch(1)
		var nextTag uint64 = 1
		next := 0
		var retry []int
		settled := map[tagKey]bool{}
		acked := map[int]bool{} // latest attempt acked by the broker
		everDelivered := map[int]bool{}
		published := map[int]bool{}
		settle := func(tag uint64, ack bool) {
			p, ok := tr.Settle(epoch, tag)
			k := tagKey{epoch, tag}
			if ok {
				if settled[k] {
					t.Fatalf("tag %v settled twice", k)
				}
				settled[k] = true
				if err := l.Settle(p.Seq, ack); err != nil {
					t.Fatal(err)
				}
				acked[p.Seq] = ack
				delete(backlog, p.Seq)
			}
		}
		inDoubt := func(seq int) {
			if l.MarkInDoubt(seq) {
				backlog[seq] = true
			}
			retry = append(retry, seq)
		}
		for i, op := range ops {
			arg := 0
			if i+1 < len(ops) {
				arg = int(ops[i+1])
			}
			switch op % 10 {
			case 0: // publish: a republish first, else a fresh id
				seq := -1
				if len(retry) > 0 {
					seq, retry = retry[0], retry[1:]
				} else if next < n {
					seq = next
					next++
				}
				if seq < 0 {
					continue
				}
				ok, err := tr.Track(epoch, nextTag, seq, time.Time{})
				if err != nil {
					t.Fatal(err)
				}
				if !ok { // the channel is closed: the publisher reconnects first
					retry = append([]int{seq}, retry...)
					epoch++
					nextTag = 1
					continue
				}
				l.Published(seq, true)
				published[seq] = true
				delete(acked, seq)
				nextTag++
			case 1: // basic.ack of one tag
				settle(uint64(arg%int(nextTag))+1, true)
			case 2: // basic.nack of one tag; republished under nacked-and-in-doubt (odd arg)
				tag := uint64(arg%int(nextTag)) + 1
				p, pending := tr.Settle(epoch, tag)
				if !pending {
					continue
				}
				tr.Track(epoch, tag, p.Seq, time.Time{}) // put back for settle
				settle(tag, false)
				if arg%2 == 1 {
					retry = append(retry, p.Seq)
				}
			case 3: // basic.ack multiple=true up to a tag, expanded once per tag
				upTo := uint64(arg%int(nextTag)) + 1
				for tag := uint64(1); tag <= upTo; tag++ {
					settle(tag, true)
				}
			case 4: // basic.return of some taken id
				if next > 0 {
					l.Returned(arg % next)
				}
			case 5: // channel closed: pending confirms are in doubt, queued for republish
				for _, p := range tr.CloseEpoch(epoch) {
					inDoubt(p.Seq)
				}
			case 6: // reconnect: new epoch, tags restart at 1
				for _, p := range tr.CloseEpoch(epoch) {
					inDoubt(p.Seq)
				}
				epoch++
				nextTag = 1
			case 7, 8: // delivery or redelivery of some published id
				if seq := arg % n; published[seq] { // nothing is delivered before it is published
					l.Delivered(l.MessageID(seq), op%10 == 8)
					everDelivered[seq] = true
				}
			case 9: // the scenario deleted the queue
				l.QueueDeleted(arg%2 == 1)
			}
		}
		inFlight := 0
		for seq := range n {
			if l.Outcome(seq) == InFlight {
				inFlight++
			}
		}
		if tot := series.Totals(); tot.InFlight != inFlight || tot.Backlog != len(backlog) {
			t.Fatalf("series: in flight %d backlog %d, want %d %d", tot.InFlight, tot.Backlog, inFlight, len(backlog))
		}
		c, ids, err := l.Reconcile(true)
		if err != nil {
			t.Fatal(err)
		}
		if c.Sent != len(published) {
			t.Fatalf("sent %d, published %d distinct ids", c.Sent, len(published))
		}
		wantLost := 0
		for seq, ack := range acked {
			if ack && !everDelivered[seq] && l.Outcome(seq) == Acked {
				wantLost++
			}
		}
		if c.Lost != wantLost {
			t.Fatalf("lost %d, want %d (acked, never delivered)", c.Lost, wantLost)
		}
		seen := map[int]string{}
		for name, rs := range map[string][]Range{"lost": ids.Lost, "missing": ids.UnconfirmedMissing, "in-doubt": ids.InDoubt, "nacked": ids.Nacked, "returned": ids.Returned, "resurrected": ids.Resurrected} {
			for _, r := range rs {
				for seq := r.First; seq <= r.Last; seq++ {
					if other, dup := seen[seq]; dup {
						t.Fatalf("id %d is both %s and %s", seq, other, name)
					}
					seen[seq] = name
				}
			}
		}
		if len(seen) != c.Lost+c.UnconfirmedMissing+c.InDoubt+c.Nacked+c.Returned+c.Resurrected {
			t.Fatalf("listed ids %d do not match the counts %+v", len(seen), c)
		}
		// The listed ids behind went_in_doubt and went_nacked are exactly
		// the counts, and every republished id (a retry only ever follows an
		// in-doubt or a nack) went in doubt or was nacked.
		set := func(rs []Range) map[int]bool {
			m := map[int]bool{}
			for _, r := range rs {
				for seq := r.First; seq <= r.Last; seq++ {
					m[seq] = true
				}
			}
			return m
		}
		wentDoubt, wentNacked := set(ids.WentInDoubt), set(ids.WentNacked)
		if len(wentDoubt) != c.WentInDoubt || len(wentNacked) != c.WentNacked {
			t.Fatalf("went-in-doubt ids %d, count %d; went-nacked ids %d, count %d", len(wentDoubt), c.WentInDoubt, len(wentNacked), c.WentNacked)
		}
		for seq := range set(ids.Republished) {
			if !wentDoubt[seq] && !wentNacked[seq] {
				t.Fatalf("id %d republished without going in doubt or being nacked", seq)
			}
		}
	})
}
