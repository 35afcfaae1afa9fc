package metrics

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPartRange(t *testing.T) {
	got := [][2]int{}
	for k := 1; k <= 3; k++ {
		f, e := PartRange(10, k, 3)
		got = append(got, [2]int{f, e})
	}
	if want := [][2]int{{0, 3}, {3, 6}, {6, 10}}; !slices.Equal(got, want) {
		t.Errorf("10 ids in 3 parts: %v, want %v", got, want)
	}
	// Contiguous, disjoint, covering, sizes within one of each other.
	for _, c := range []struct{ m, n int }{{4000, 4}, {7, 7}, {1_000_003, 7}, {1000, 1000}, {5, 1}} {
		next, small, big := 0, c.m, 0
		for k := 1; k <= c.n; k++ {
			f, e := PartRange(c.m, k, c.n)
			if f != next || e <= f {
				t.Fatalf("%d ids, part %d/%d: [%d, %d) after %d", c.m, k, c.n, f, e, next)
			}
			next, small, big = e, min(small, e-f), max(big, e-f)
		}
		if next != c.m || big-small > 1 {
			t.Errorf("%d ids in %d parts: end %d, sizes %d–%d", c.m, c.n, next, small, big)
		}
	}
}

func TestParsePart(t *testing.T) {
	for _, c := range []struct {
		in   string
		k, n int
		err  string
	}{
		{"2/4", 2, 4, ""},
		{"1/1", 1, 1, ""},
		{"1000/1000", 1000, 1000, ""},
		{"2", 0, 0, `"2" is not K/N, the part K of N parts (e.g. 2/4)`},
		{"a/4", 0, 0, `"a/4" is not K/N, the part K of N parts (e.g. 2/4)`},
		{"5/4", 0, 0, `"5/4": K must be within 1–4 (N), got 5`},
		{"0/4", 0, 0, `"0/4": K must be within 1–4 (N), got 0`},
		{"1/0", 0, 0, `"1/0": N must be within 1–1000, got 0`},
		{"1/1001", 0, 0, `"1/1001": N must be within 1–1000, got 1001`},
	} {
		k, n, err := ParsePart(c.in)
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if k != c.k || n != c.n || msg != c.err {
			t.Errorf("ParsePart(%q) = %d, %d, %q; want %d, %d, %q", c.in, k, n, msg, c.k, c.n, c.err)
		}
	}
}

var partsStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// partHistory records load part k of 2 of a 10-id confirm-window burst:
// its ids published on epoch 1 with tags from 1 (as every process numbers
// them), each acked except those in nack; publish also names extra
// sequence numbers to publish beyond its range.
func partHistory(t *testing.T, k int, nack map[int]bool, extra ...int) []byte {
	t.Helper()
	first, end := PartRange(10, k, 2)
	var buf bytes.Buffer
	w, err := NewHistoryWriter(&buf, HistoryHeader{Prefix: "q-", Messages: 10, ConfirmMode: true, Start: partsStart,
		Part: &Part{RunID: "r1", Index: k, Parts: 2, First: first, End: end}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLedger("q-", 10)
	l.RecordTo(w)
	tr := NewConfirmTracker().ReportTo(l)
	seqs := extra
	for seq := first; seq < end; seq++ {
		seqs = append(seqs, seq)
	}
	for i, seq := range seqs {
		if ok, err := tr.Track(1, uint64(i+1), seq, partsStart); !ok || err != nil {
			t.Fatal(ok, err)
		}
		l.Published(seq, true)
	}
	for i, seq := range seqs {
		p, ok := tr.Settle(1, uint64(i+1))
		if !ok {
			t.Fatalf("tag %d", i+1)
		}
		if err := l.Settle(p.Seq, !nack[seq]); err != nil {
			t.Fatal(err)
		}
	}
	l.Reconcile(false)
	l.RecordTo(nil)
	if err := w.Close(HistoryTrailer{}, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// drainHistory records a drain of the 10-id burst delivering ids.
func drainHistory(t *testing.T, ids ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewHistoryWriter(&buf, HistoryHeader{Prefix: "q-", Messages: 10, ConfirmMode: true, Start: partsStart,
		Part: &Part{RunID: "r1", Parts: 2, Drain: true}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLedger("q-", 10)
	l.RecordTo(w)
	for _, id := range ids {
		l.DeliveredAttempt(id, false, 1)
	}
	l.Reconcile(true)
	l.RecordTo(nil)
	if err := w.Close(HistoryTrailer{}, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func replayInto(t *testing.T, h []byte, l *Ledger) *Replay {
	t.Helper()
	r, err := NewHistoryReader(bytes.NewReader(h))
	if err != nil {
		t.Fatal(err)
	}
	rp, err := ReplayHistoryInto(r, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rp
}

// TestReplayPartsIntoOneLedger: two load parts that both number their
// channel epoch 1 and delivery tags from 1, and a drain, build one ledger:
// each part's confirms resolve against its own tags.
func TestReplayPartsIntoOneLedger(t *testing.T) {
	p1 := replayInto(t, partHistory(t, 1, nil), nil)
	p2 := replayInto(t, partHistory(t, 2, map[int]bool{9: true}), p1.Ledger)
	dr := replayInto(t, drainHistory(t, "q-0", "q-1", "q-2", "q-3", "q-3", "q-4", "q-5", "q-6", "q-7", "q-8", "other-1"), p1.Ledger)
	for _, rp := range []*Replay{p1, p2, dr} {
		if len(rp.Inconsistencies) > 0 {
			t.Errorf("%v: inconsistencies %q", rp.Header.Part, rp.Inconsistencies)
		}
	}
	if p2.Ledger != p1.Ledger || dr.Ledger != p1.Ledger || !dr.Drained || p1.Drained {
		t.Fatalf("ledgers %p %p %p, drained %v %v: want one ledger, drained by the drain only", p1.Ledger, p2.Ledger, dr.Ledger, p1.Drained, dr.Drained)
	}
	c, ids, err := p1.Ledger.Reconcile(dr.Drained)
	if err != nil {
		t.Fatal(err)
	}
	if c.Sent != 10 || c.Confirmed != 9 || c.Nacked != 1 || c.Lost != 0 || c.Delivered != 9 || c.Duplicates != 1 || c.Unexpected != 1 || c.InDoubt != 0 {
		t.Errorf("merged counts %+v; want 10 sent, 9 confirmed and delivered, 1 nacked, 1 duplicate, 1 unexpected, 0 lost", c)
	}
	if len(ids.Nacked) != 1 || ids.Nacked[0] != (Range{9, 9}) || len(ids.Duplicated) != 1 || ids.Duplicated[0] != (Range{3, 3}) {
		t.Errorf("ids %+v; want nacked 9, duplicated 3", ids)
	}
}

// TestReplayPartOutOfRange: a part that publishes an id outside its share
// is a history inconsistency; a history of another burst is refused.
func TestReplayPartOutOfRange(t *testing.T) {
	rp := replayInto(t, partHistory(t, 1, nil, 7), nil)
	if want := []string{"part 1/2 published q-7, outside its ids 0–4"}; strings.Join(rp.Inconsistencies, "|") != strings.Join(want, "|") {
		t.Errorf("inconsistencies %q, want %q", rp.Inconsistencies, want)
	}
	r, err := NewHistoryReader(bytes.NewReader(partHistory(t, 2, nil)))
	if err != nil {
		t.Fatal(err)
	}
	_, err = ReplayHistoryInto(r, NewLedger("other-", 10), nil)
	if want := "history of 10 ids q-…, not the 10 ids other-… it is merged with"; err == nil || err.Error() != want {
		t.Errorf("merged with another burst's ledger: %v, want %q", err, want)
	}
}

// TestReplaySkipsMissingPart: without part 2's history, the drain's
// deliveries of its ids are set aside, not unexpected.
func TestReplaySkipsMissingPart(t *testing.T) {
	p1 := replayInto(t, partHistory(t, 1, nil), nil)
	r, err := NewHistoryReader(bytes.NewReader(drainHistory(t, "q-0", "q-1", "q-2", "q-3", "q-4", "q-5", "q-6", "q-7", "q-8", "q-9", "other-1")))
	if err != nil {
		t.Fatal(err)
	}
	dr, err := ReplayHistoryInto(r, p1.Ledger, func(seq int) bool { return seq >= 5 })
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := p1.Ledger.Reconcile(dr.Drained)
	if err != nil {
		t.Fatal(err)
	}
	if dr.Skipped != 5 || c.Sent != 5 || c.Confirmed != 5 || c.Delivered != 5 || c.Unexpected != 1 || c.Lost != 0 {
		t.Errorf("skipped %d, counts %+v; want 5 skipped, 5 sent, confirmed and delivered, 1 unexpected (other-1)", dr.Skipped, c)
	}
}
