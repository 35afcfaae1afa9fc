package metrics

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

var histStart = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// judgedHeader and judgedTrailer stand for the fields a caller (verdict)
// writes beside the codec's.
var (
	judgedHeader  = map[string]any{"mode": "confirm-window", "expect": json.RawMessage(`{"MaxDuplicates":0}`)}
	judgedTrailer = map[string]any{"drained": true, "blocked_ms": 12.5, "channel_closes": []string{"320 CONNECTION_FORCED"}}
)

// A caller's field may not take a codec field's name, and must be an
// object: the header and the trailer are one flat object each.
func TestHistoryJudgedFieldsBesideTheCodec(t *testing.T) {
	for _, judged := range []any{map[string]int{"prefix": 1}, []int{1}, "mode"} {
		if _, err := NewHistoryWriter(io.Discard, HistoryHeader{}, judged); err == nil {
			t.Errorf("%v: written", judged)
		}
	}
	w, err := NewHistoryWriter(io.Discard, HistoryHeader{}, struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(HistoryTrailer{}, map[string]int{"dead_letter_rule": 1}); err == nil {
		t.Error("trailer field dead_letter_rule written twice")
	}
}

// record runs fn against a recording ledger of n ids (confirm mode) and
// returns the history and the ledger's own reconciliation.
func record(t testing.TB, n int, confirm bool, fn func(l *Ledger, tr *ConfirmTracker)) ([]byte, Counts, IDSets) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewHistoryWriter(&buf, HistoryHeader{Prefix: "q-", Messages: n, ConfirmMode: confirm, Start: histStart}, judgedHeader)
	if err != nil {
		t.Fatal(err)
	}
	l := NewLedger("q-", n)
	l.RecordTo(w)
	fn(l, NewConfirmTracker().ReportTo(l))
	c, ids, err := l.Reconcile(true)
	if err != nil {
		t.Fatal(err)
	}
	l.RecordTo(nil)
	if err := w.Close(HistoryTrailer{}, judgedTrailer); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), c, ids
}

func replay(t testing.TB, b []byte) *Replay {
	t.Helper()
	r, err := NewHistoryReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	rp, err := ReplayHistory(r)
	if err != nil {
		t.Fatal(err)
	}
	return rp
}

// pubConfirm publishes seq on (epoch, tag) as the publisher does.
func pubConfirm(t testing.TB, l *Ledger, tr *ConfirmTracker, epoch Epoch, tag uint64, seq int) {
	if ok, err := tr.Track(epoch, tag, seq, histStart.Add(time.Duration(seq)*time.Millisecond)); !ok || err != nil {
		t.Fatal(ok, err)
	}
	l.Published(seq, true)
}

func confirm(t testing.TB, l *Ledger, tr *ConfirmTracker, epoch Epoch, tag uint64, ack bool) {
	p, ok := tr.Settle(epoch, tag)
	if !ok {
		t.Fatalf("tag %d not pending", tag)
	}
	if err := l.Settle(p.Seq, ack); err != nil {
		t.Fatal(err)
	}
}

// mixedRun: 10 ids on epoch 1: 0–5 acked (3 returned first), 6 nacked, 7–8
// in doubt when epoch 1 closes, 9's publish call fails; 7 and 9 republished
// on epoch 2 and acked; delivered: 0–9 except 2 and 6, 7 twice (a
// duplicate), 4 once more from the dead-letter queue, and one unexpected id.
func mixedRun(t testing.TB) func(l *Ledger, tr *ConfirmTracker) {
	return func(l *Ledger, tr *ConfirmTracker) {
		for seq := range 10 {
			pubConfirm(t, l, tr, 1, uint64(seq+1), seq)
		}
		if _, ok := tr.Settle(1, 10); !ok {
			t.Fatal("tag 10")
		}
		l.PublishFailed(9, true)
		l.Returned(3)
		for seq := range 6 {
			confirm(t, l, tr, 1, uint64(seq+1), true)
		}
		confirm(t, l, tr, 1, 7, false)
		for _, p := range tr.CloseEpoch(1) {
			l.MarkInDoubt(p.Seq)
		}
		pubConfirm(t, l, tr, 2, 1, 7)
		pubConfirm(t, l, tr, 2, 2, 9)
		confirm(t, l, tr, 2, 1, true)
		confirm(t, l, tr, 2, 2, true)
		for _, seq := range []int{0, 1, 3, 4, 5, 7, 8, 9} {
			l.DeliveredAttempt(l.MessageID(seq), false, 1)
		}
		l.DeliveredAttempt(l.MessageID(7), true, 2)
		l.DeadLettered(l.MessageID(4))
		l.Delivered("other-1", false)
	}
}

func TestHistoryReplayReproducesLedger(t *testing.T) {
	b, c, ids := record(t, 10, true, mixedRun(t))
	rp := replay(t, b)
	if len(rp.Inconsistencies) != 0 {
		t.Fatalf("inconsistencies: %q", rp.Inconsistencies)
	}
	gc, gids, err := rp.Ledger.Reconcile(rp.Drained)
	if err != nil {
		t.Fatal(err)
	}
	if gc != c || !reflect.DeepEqual(gids, ids) {
		t.Fatalf("replay\n%+v %+v\nrun\n%+v %+v", gc, gids, c, ids)
	}
	// The run itself, derived by hand.
	// Confirmed 0 1 4 5 7 9; 2 lost; 3 returned before its ack; 6 nacked;
	// 8 in doubt (never republished) but delivered.
	want := Counts{Sent: 10, Confirmed: 6, Lost: 1, Nacked: 1, Returned: 1, InDoubt: 1, InDoubtDelivered: 1, WentInDoubt: 3, Republished: 2, PublishErrors: 1,
		Delivered: 8, Deliveries: 10, Duplicates: 1, DuplicatesFromRepublish: 1, Unexpected: 1, DeadLettered: 1, WentNacked: 1}
	if c != want {
		t.Fatalf("counts\n got %+v\nwant %+v", c, want)
	}
	if !reflect.DeepEqual(ids.Lost, []Range{{2, 2}}) || !reflect.DeepEqual(ids.Duplicated, []Range{{7, 7}}) {
		t.Fatalf("ids %+v", ids)
	}
	// 7 and 8 went in doubt at the close, 9 at its failed publish; 7 and 9
	// were republished, 8 not: the replay lists the same ids.
	if !reflect.DeepEqual(ids.WentInDoubt, []Range{{7, 9}}) || !reflect.DeepEqual(ids.Republished, []Range{{7, 7}, {9, 9}}) ||
		!reflect.DeepEqual(gids.WentInDoubt, ids.WentInDoubt) || !reflect.DeepEqual(gids.Republished, ids.Republished) {
		t.Fatalf("went in doubt %v republished %v (replayed %v %v)", ids.WentInDoubt, ids.Republished, gids.WentInDoubt, gids.Republished)
	}
	// The caller's fields ride beside the codec's, in one object each.
	wantHead := `{"version":1,"prefix":"q-","messages":10,"confirm_mode":true,"start":"2025-01-02T03:04:05Z","expect":{"MaxDuplicates":0},"mode":"confirm-window"}`
	wantTrail := `{"blocked_ms":12.5,"channel_closes":["320 CONNECTION_FORCED"],"drained":true}`
	if !rp.Drained || rp.Header.Prefix != "q-" || string(rp.HeaderJSON) != wantHead || string(rp.TrailerJSON) != wantTrail {
		t.Fatalf("header/trailer %+v %s %s", rp.Header, rp.HeaderJSON, rp.TrailerJSON)
	}
}

func TestHistoryFireAndForgetAndDeadlines(t *testing.T) {
	b, c, ids := record(t, 6, false, func(l *Ledger, _ *ConfirmTracker) {
		l.Published(0, false)
		l.PublishFailed(1, false)
		l.Published(1, false)
		l.Published(2, false)
		l.Returned(2)
		l.MarkNotPublished(3)
		l.Published(4, false)
		l.MarkPastDeadline(4)
		l.DeliveredAttempt(l.MessageID(0), false, 0)
		l.Retried(l.MessageID(0))
		l.DeliveredAttempt(l.MessageID(0), false, 0)
		l.Parked(l.MessageID(1))
		l.DeadLettered(l.MessageID(1))
	})
	rp := replay(t, b)
	gc, gids, err := rp.Ledger.Reconcile(rp.Drained)
	if err != nil || gc != c || !reflect.DeepEqual(gids, ids) || len(rp.Inconsistencies) != 0 {
		t.Fatalf("replay %+v %+v %v %q\nrun %+v %+v", gc, gids, err, rp.Inconsistencies, c, ids)
	}
	if c.NotPublished != 1 || c.RetryDeliveries != 1 || c.UnconfirmedMissing != 1 || c.Returned != 1 || c.PendingAtDeadline != 1 {
		t.Fatalf("counts %+v", c)
	}
}

// records decodes a history into its records (header and trailer apart).
func records(t *testing.T, b []byte) (HistoryHeader, []HistoryRecord, HistoryTrailer) {
	r, err := NewHistoryReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var out []HistoryRecord
	for {
		rec, err := r.Next()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatal(err)
			}
			break
		}
		out = append(out, rec)
	}
	return r.Header, out, r.Trailer()
}

// rewrite writes a history with the given records.
func rewrite(t *testing.T, h HistoryHeader, recs []HistoryRecord, tr HistoryTrailer) []byte {
	var buf bytes.Buffer
	w, err := NewHistoryWriter(&buf, h, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		w.Write(r)
	}
	if err := w.Close(tr, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestHistoryRoundTripRecords(t *testing.T) {
	b, _, _ := record(t, 10, true, mixedRun(t))
	h, recs, tr := records(t, b)
	if len(recs) != 38 {
		t.Fatalf("%d records", len(recs))
	}
	first := recs[0]
	if first.Kind != HPublish || first.Seq != 0 || first.Attempt != 1 || first.Epoch != 1 || first.Tag != 1 || !first.Time.Equal(histStart) {
		t.Fatalf("first record %+v", first)
	}
	var closes []HistoryRecord
	for _, r := range recs {
		if r.Kind == HEpochClosed {
			closes = append(closes, r)
		}
	}
	if len(closes) != 1 || closes[0].Epoch != 1 || closes[0].Pending != 2 {
		t.Fatalf("epoch closes %+v", closes)
	}
	again := rewrite(t, h, recs, tr)
	_, recs2, _ := records(t, again)
	if !reflect.DeepEqual(recs, recs2) {
		t.Fatal("records differ after a rewrite")
	}
}

func TestHistoryTruncatedOrCorrupt(t *testing.T) {
	b, _, _ := record(t, 10, true, mixedRun(t))
	for _, cut := range []int{5, len(b) / 2, len(b) - 9, len(b) - 1} {
		r, err := NewHistoryReader(bytes.NewReader(b[:cut]))
		if err == nil {
			_, err = ReplayHistory(r)
		}
		if !errors.Is(err, ErrHistoryCorrupt) {
			t.Fatalf("cut at %d of %d: %v", cut, len(b), err)
		}
	}
	if _, err := NewHistoryReader(strings.NewReader(`{"schema_version":1}`)); !errors.Is(err, ErrHistoryCorrupt) {
		t.Fatalf("not gzip: %v", err)
	}
	// A stream that stops before the trailer (the process died mid-run).
	var buf bytes.Buffer
	w, _ := NewHistoryWriter(&buf, HistoryHeader{Prefix: "q-", Messages: 2}, nil)
	w.Write(HistoryRecord{Kind: HPublish, Seq: 1, Attempt: 1})
	w.mu.Lock()
	_ = w.bw.Flush()
	_ = w.gz.Close()
	w.mu.Unlock()
	r, err := NewHistoryReader(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReplayHistory(r); err == nil || !strings.Contains(err.Error(), "truncated in the record stream (no trailer) after 1 records") {
		t.Fatalf("no trailer: %v", err)
	}
}

func TestHistoryPlantedCorruption(t *testing.T) {
	b, c, _ := record(t, 10, true, mixedRun(t))
	h, recs, tr := records(t, b)
	// Drop the first basic.ack (id 0): it is in doubt, no longer confirmed.
	var dropped []HistoryRecord
	done := false
	for _, r := range recs {
		if r.Kind == HAck && !done {
			done = true
			continue
		}
		dropped = append(dropped, r)
	}
	gc, gids, _ := replay(t, rewrite(t, h, dropped, tr)).Ledger.Reconcile(true)
	if gc.Confirmed != c.Confirmed-1 || gc.InDoubt != c.InDoubt+1 || !reflect.DeepEqual(gids.InDoubt, []Range{{0, 0}, {8, 8}}) {
		t.Fatalf("ack dropped: %+v %+v", gc, gids)
	}
	// Duplicate the delivery of id 0: a duplicate appears.
	var dup []HistoryRecord
	for _, r := range recs {
		dup = append(dup, r)
		if r.Kind == HDelivered && r.Seq == 0 {
			dup = append(dup, r)
		}
	}
	gc, gids, _ = replay(t, rewrite(t, h, dup, tr)).Ledger.Reconcile(true)
	if gc.Duplicates != c.Duplicates+1 || !reflect.DeepEqual(gids.Duplicated, []Range{{0, 0}, {7, 7}}) {
		t.Fatalf("delivery duplicated: %+v %+v", gc, gids)
	}
	// An ack for a tag never published, and one on the closed epoch.
	bad := append(append([]HistoryRecord{}, recs...), HistoryRecord{Kind: HAck, Epoch: 2, Tag: 9}, HistoryRecord{Kind: HAck, Epoch: 1, Tag: 8})
	rp := replay(t, rewrite(t, h, bad, tr))
	want := []string{"basic.ack for delivery tag 9 on epoch 2, which carries no unconfirmed publish",
		"basic.ack for delivery tag 8 on epoch 1, which was already closed"}
	if !reflect.DeepEqual(rp.Inconsistencies, want) {
		t.Fatalf("inconsistencies %q", rp.Inconsistencies)
	}
}

// writeConfirmWindow records n ids as a confirm-window burst would: publish
// and basic.ack per id (window 256), every 100th id in doubt at a channel
// close and republished on the next epoch, then one delivery per id.
func writeConfirmWindow(t testing.TB, w *HistoryWriter, n int) {
	rng := rand.New(rand.NewPCG(1, 2))
	now := histStart
	epoch, tag, acked := Epoch(1), uint64(0), uint64(0)
	var redo []int
	for seq := 0; seq < n; seq++ {
		// Publish calls 20–200 µs apart; confirms come in random batches.
		now = now.Add(time.Duration(20+rng.IntN(180)) * time.Microsecond)
		tag++
		w.Write(HistoryRecord{Kind: HPublish, Seq: seq, Attempt: 1, Epoch: epoch, Tag: tag, Time: now})
		if seq%100 == 99 {
			for acked < tag-1 {
				acked++
				w.Write(HistoryRecord{Kind: HAck, Epoch: epoch, Tag: acked})
			}
			redo = append(redo, seq)
			w.Write(HistoryRecord{Kind: HEpochClosed, Epoch: epoch, Pending: 1})
			w.Write(HistoryRecord{Kind: HInDoubt, Seq: seq})
			epoch, tag, acked = epoch+1, 0, 0
			continue
		}
		for k := rng.IntN(3); k > 0 && acked < tag; k-- {
			acked++
			w.Write(HistoryRecord{Kind: HAck, Epoch: epoch, Tag: acked})
		}
	}
	for _, seq := range redo {
		tag++
		w.Write(HistoryRecord{Kind: HPublish, Seq: seq, Attempt: 2, Epoch: epoch, Tag: tag, Time: now})
		w.Write(HistoryRecord{Kind: HAck, Epoch: epoch, Tag: tag})
	}
	// Deliveries in publish order but for the republished ids, which come
	// last, some flagged redelivered.
	for seq := range n {
		if seq%100 != 99 {
			w.Write(HistoryRecord{Kind: HDelivered, Seq: seq, Attempt: 1, Redelivered: rng.IntN(50) == 0})
		}
	}
	for _, seq := range redo {
		w.Write(HistoryRecord{Kind: HDelivered, Seq: seq, Attempt: 2})
	}
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// TestHistoryBytesPerMessage measures the compressed size of a realistic
// 1,000,000-id confirm-window history (the figure in history.go's doc).
func TestHistoryBytesPerMessage(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 1,000,000-message history")
	}
	const n = 1_000_000
	var cw countingWriter
	w, err := NewHistoryWriter(&cw, HistoryHeader{Prefix: "q-", Messages: n, ConfirmMode: true, Start: histStart}, nil)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	writeConfirmWindow(t, w, n)
	recs := w.Records()
	if err := w.Close(HistoryTrailer{}, nil); err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	perMsg := float64(cw.n) / n
	t.Logf("%d records, %d bytes: %.2f bytes/msg, %.0f events/s", recs, cw.n, perMsg, float64(recs)/took.Seconds())
	if perMsg > 10 {
		t.Fatalf("%.2f bytes per message, over the 10-byte budget", perMsg)
	}
}

func BenchmarkHistoryWriter(b *testing.B) {
	var cw countingWriter
	w, _ := NewHistoryWriter(&cw, HistoryHeader{Prefix: "q-", Messages: b.N, ConfirmMode: true, Start: histStart}, nil)
	b.ResetTimer()
	writeConfirmWindow(b, w, b.N)
	_ = w.Close(HistoryTrailer{}, nil)
	b.ReportMetric(float64(cw.n)/float64(b.N), "bytes/msg")
}

// pubCopy publishes seq on (epoch, tag) while an earlier attempt of it still
// awaits its confirm on the same channel, reporting the attempt to the
// tracker as the publisher does under on_confirm_timeout: republish.
func pubCopy(t testing.TB, l *Ledger, tr *ConfirmTracker, epoch Epoch, tag uint64, seq int) {
	if ok, err := tr.Track(epoch, tag, seq, histStart.Add(time.Second)); !ok || err != nil {
		t.Fatal(ok, err)
	}
	tr.SetAttempt(epoch, tag, l.Published(seq, true))
}

// TestHistoryCopiesOnOneChannel: under on_confirm_timeout: republish, ids 0,
// 1 and 2 time out on epoch 1 and are published again on it (tags 4–6),
// their originals staying tracked. Id 0's original is acked late (it settles
// the id), then its copy; id 1's copy is acked first, then its original (a
// late confirm of a settled id); epoch 1 closes with id 2's original and
// copy both pending: one id in doubt, republished once on epoch 2. Id 3 is
// an ordinary publish. The ledger and its replay agree on every count.
func TestHistoryCopiesOnOneChannel(t *testing.T) {
	wentInDoubt := 0
	b, c, ids := record(t, 4, true, func(l *Ledger, tr *ConfirmTracker) {
		for seq := range 4 {
			pubConfirm(t, l, tr, 1, uint64(seq+1), seq)
			tr.SetAttempt(1, uint64(seq+1), 1)
		}
		confirm(t, l, tr, 1, 4, true)
		for seq := range 3 {
			pubCopy(t, l, tr, 1, uint64(seq+5), seq)
		}
		settle := func(tag uint64) bool {
			p, ok := tr.Settle(1, tag)
			if !ok {
				t.Fatalf("tag %d not pending", tag)
			}
			settled, err := l.SettleAttempt(p.Seq, p.Attempt, true)
			if err != nil {
				t.Fatal(err)
			}
			return settled
		}
		if !settle(1) || settle(5) || !settle(6) || settle(2) {
			t.Fatal("the first confirm of an id settles it, the others only close copies")
		}
		for _, p := range tr.CloseEpoch(1) {
			if l.MarkInDoubt(p.Seq) {
				wentInDoubt++
			}
		}
		pubConfirm(t, l, tr, 2, 1, 2)
		confirm(t, l, tr, 2, 1, true)
		for seq := range 4 {
			l.DeliveredAttempt(l.MessageID(seq), false, 1)
		}
		for seq := range 3 {
			l.DeliveredAttempt(l.MessageID(seq), false, 2)
		}
		l.DeliveredAttempt(l.MessageID(2), false, 3)
	})
	if wentInDoubt != 1 {
		t.Fatalf("%d ids went in doubt at the close, want 1 (id 2, two tags pending)", wentInDoubt)
	}
	// Copies: 3 on epoch 1 plus id 2's republish on epoch 2; late: id 0's
	// and id 1's originals; duplicates: 1 each for ids 0 and 1, 2 for id 2.
	want := Counts{Sent: 4, Confirmed: 4, WentInDoubt: 1, Republished: 4, Delivered: 4, Deliveries: 8,
		Duplicates: 4, DuplicatesFromRepublish: 4, LateConfirms: 2}
	if c != want {
		t.Fatalf("counts\n got %+v\nwant %+v", c, want)
	}
	rp := replay(t, b)
	if len(rp.Inconsistencies) != 0 {
		t.Fatalf("inconsistencies: %q", rp.Inconsistencies)
	}
	gc, gids, err := rp.Ledger.Reconcile(rp.Drained)
	if err != nil || gc != c || !reflect.DeepEqual(gids, ids) {
		t.Fatalf("replay %v\n%+v %+v\nrun\n%+v %+v", err, gc, gids, c, ids)
	}
}
