package verdict

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

var start = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// sample is evidence with every input field set, so that a field the
// history loses fails TestEvidenceRoundTripsThroughTheHistory.
func sample() Evidence {
	one, zero := 1, 0
	return Evidence{
		Header: Header{Mode: scenario.ConfirmWindow, Expect: scenario.Expect{
			Modes:       map[scenario.Mode]scenario.ModeExpectations{scenario.ConfirmWindow: {Duplicates: &zero}},
			MaxInDoubt:  &one,
			MaxReturned: &zero,
		}},
		Trailer: Trailer{Drained: true,
			Conditions: scenario.Conditions{Interrupted: true,
				PublishErr: scenario.Failure{Err: errors.New("publisher: reconnect deadline")}, BrokerNotBack: scenario.Failure{Err: errors.New("broker not back")},
				FaultMissed: scenario.Failure{Err: errors.New("kill never fired")}, DrainIncomplete: scenario.Failure{Err: errors.New("drain: deadline")}},
			Observed: scenario.Observed{BlockedMS: 12.5, ChannelCloses: []string{"320 CONNECTION_FORCED"}, LostAllowed: true,
				Consumers:             &scenario.ConsumerStats{Count: 2, Prefetch: 10, AckEvery: 1, OnDelivery: scenario.ConsumerAck},
				DeadLetterLossAllowed: true, DeadLetterGuarantee: "at most once", FalseAcks: 3,
				AssertionsFailed: []string{"cluster not whole"}, DeadLetterReasons: map[string]int{"expired": 2}, PowerCutsUnproven: []string{"power-loss (published 10) on rmqt-x: the unsynced control file was still there after the cut"}},
		},
	}
}

// everySet fails for each field of v (a struct) left at its zero value,
// but the ones named in computed.
func everySet(t *testing.T, v reflect.Value, computed ...string) {
	t.Helper()
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		if v.Field(i).IsZero() && !strings.Contains(strings.Join(computed, " "), name) {
			t.Errorf("sample evidence leaves %s.%s unset: set it, so the round trip covers it", v.Type().Name(), name)
		}
	}
}

// burst records a small confirm-window burst into l: six ids published
// and acked, five delivered (one redelivered), one never published.
func burst(t *testing.T, l *metrics.Ledger) {
	t.Helper()
	tr := metrics.NewConfirmTracker().ReportTo(l)
	for seq := range 6 {
		if ok, err := tr.Track(1, uint64(seq+1), seq, start.Add(time.Duration(seq)*time.Millisecond)); !ok || err != nil {
			t.Fatal(ok, err)
		}
		l.Published(seq, true)
		p, _ := tr.Settle(1, uint64(seq+1))
		if err := l.Settle(p.Seq, true); err != nil {
			t.Fatal(err)
		}
	}
	for seq := range 5 {
		l.Delivered(l.MessageID(seq), false)
	}
	l.Delivered(l.MessageID(0), true)
}

// run is what the engine does with a burst's evidence: write it as the
// history's header, record the burst, conclude, write it as the trailer.
func run(t *testing.T, ev Evidence) ([]byte, scenario.ModeResult, Evidence) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewHistoryWriter(&buf, metrics.HistoryHeader{Prefix: "q-", Messages: 7, ConfirmMode: true, Start: start}, ev.Header)
	if err != nil {
		t.Fatal(err)
	}
	l := metrics.NewLedger("q-", 7)
	l.RecordTo(w)
	burst(t, l)
	var res scenario.ModeResult
	Conclude(&res, l, &ev, nil)
	l.RecordTo(nil)
	if err := CloseHistory(w, l, ev.Trailer); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), res, ev
}

func replay(t *testing.T, b []byte) *metrics.Replay {
	t.Helper()
	r, err := metrics.NewHistoryReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	rp, err := metrics.ReplayHistory(r)
	if err != nil {
		t.Fatal(err)
	}
	return rp
}

// The evidence a run concluded on comes back whole from its history, and
// check, concluding on it again, reaches the run's counts, ids and verdict.
func TestEvidenceRoundTripsThroughTheHistory(t *testing.T) {
	in := sample()
	everySet(t, reflect.ValueOf(in.Header))
	everySet(t, reflect.ValueOf(in.Conditions), "ReconcileErr", "Unsent") // Conclude's findings
	everySet(t, reflect.ValueOf(in.Observed))
	b, res, concluded := run(t, in)
	if concluded.Unsent != 1 || concluded.ReconcileErr.Err != nil {
		t.Fatalf("Conclude recorded unsent %d, reconcile error %v", concluded.Unsent, concluded.ReconcileErr.Err)
	}
	rp := replay(t, b)
	got, err := FromReplay(rp)
	if err != nil {
		t.Fatal(err)
	}
	// Errors come back as their text.
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(concluded)
	if string(gj) != string(wj) || got.PublishErr.Err.Error() != "publisher: reconnect deadline" {
		t.Fatalf("evidence read back\n%s\nwritten\n%s", gj, wj)
	}
	rechecked, err := Recheck(rp)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rechecked, res) {
		t.Fatalf("check\n%+v\nrun\n%+v", rechecked, res)
	}
	if res.Verdict.Status != scenario.Fail || res.Lost != 1 || res.Redeliveries != 1 {
		t.Fatalf("run judged %+v counts %+v", res.Verdict, res.Counts)
	}
}

// oldHistory is a history as rmqtorture wrote it before this package:
// header and trailer in metrics' own structs, the expectations and the
// consumers' stats as JSON inside them, no records (nothing published).
func oldHistory(t *testing.T) []byte {
	t.Helper()
	head := `{"version":1,"mode":"confirm-window","prefix":"q-","messages":4,"confirm_mode":true,"start":"2025-01-02T03:04:05Z",` +
		`"expect":{"Modes":{"confirm-window":{"Duplicates":0}},"MaxUnconfirmedMissing":null,"MaxInDoubt":2,"MaxDuplicates":null,"MaxNacked":null,"MaxReturned":null,"AllowDeadLetterPathLoss":null,"Versions":null,"Scope":null}}`
	trail := `{"drained":true,"reconcile_error":"stale","unsent":4,"interrupted":true,"publish_error":"publisher: gave up","broker_not_back":"not back",` +
		`"fault_missed":"missed","drain_incomplete":"drain: deadline","blocked_ms":3.5,"channel_closes":["320"],"lost_allowed":true,` +
		`"consumers":{"count":1,"prefetch":5,"ack_every":1,"on_delivery":"ack"},"dead_letter_rule":{"after_publish_us":100,"down_us":[5]},` +
		`"dead_letter_loss_allowed":true,"dead_letter_guarantee":"at most once","false_acks":2,"assertions_failed":["not whole"],"dead_letter_reasons":{"expired":1}}`
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	b := append([]byte("rmqth"), 1)
	b = binary.AppendUvarint(b, uint64(len(head)))
	b = append(b, head...)
	b = binary.AppendUvarint(append(b, 0xFF), uint64(len(trail)))
	b = append(b, trail...)
	if _, err := gz.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A history written before the evidence was typed still reads: the same
// names land in the typed fields.
func TestOldHistoryReads(t *testing.T) {
	rp := replay(t, oldHistory(t))
	ev, err := FromReplay(rp)
	if err != nil {
		t.Fatal(err)
	}
	two, zero := 2, 0
	want := Evidence{
		Header: Header{Mode: scenario.ConfirmWindow, Expect: scenario.Expect{
			Modes: map[scenario.Mode]scenario.ModeExpectations{scenario.ConfirmWindow: {Duplicates: &zero}}, MaxInDoubt: &two}},
		Trailer: Trailer{Drained: false, // the replay's: no drain-end record
			Conditions: scenario.Conditions{ReconcileErr: scenario.Failure{Err: errors.New("stale")}, Unsent: 4, Interrupted: true,
				PublishErr: scenario.Failure{Err: errors.New("publisher: gave up")}, BrokerNotBack: scenario.Failure{Err: errors.New("not back")},
				FaultMissed: scenario.Failure{Err: errors.New("missed")}, DrainIncomplete: scenario.Failure{Err: errors.New("drain: deadline")}},
			Observed: scenario.Observed{BlockedMS: 3.5, ChannelCloses: []string{"320"}, LostAllowed: true,
				Consumers:             &scenario.ConsumerStats{Count: 1, Prefetch: 5, AckEvery: 1, OnDelivery: scenario.ConsumerAck},
				DeadLetterLossAllowed: true, DeadLetterGuarantee: "at most once", FalseAcks: 2,
				AssertionsFailed: []string{"not whole"}, DeadLetterReasons: map[string]int{"expired": 1}}},
	}
	if !reflect.DeepEqual(ev, want) {
		t.Fatalf("read\n%+v\nwant\n%+v", ev, want)
	}
	if r := rp.Trailer.DeadLetterRule; r == nil || r.AfterPublishUS != 100 {
		t.Fatalf("dead-letter rule %+v", r)
	}
	res, err := Recheck(rp)
	if err != nil {
		t.Fatal(err)
	}
	// Conclude finds unsent and the reconcile error itself.
	if res.Mode != scenario.ConfirmWindow || res.Verdict.Status != scenario.Fail || slicesContain(res.Verdict.Reasons, "stale") {
		t.Fatalf("re-judged %+v", res)
	}
}

func slicesContain(list []string, s string) bool {
	for _, l := range list {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

// A condition's error is stored as its text without a URL's password or
// terminal codes; none is stored as nothing.
func TestFailureJSON(t *testing.T) {
	tr := Trailer{Conditions: scenario.Conditions{PublishErr: scenario.Failure{Err: errors.New("dial amqp://guest:secret@host:5672: refused \x1b[31m")}}}
	b, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"drained":false,"unsent":0,"publish_error":"dial amqp://guest:xxxxx@host:5672: refused ","blocked_ms":0}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
	var back Trailer
	if err := json.Unmarshal(b, &back); err != nil || back.PublishErr.Err == nil || back.BrokerNotBack.Err != nil {
		t.Fatalf("read back %+v, %v", back, err)
	}
}

// A history whose evidence does not decode is corrupt, named as such.
func TestCorruptEvidence(t *testing.T) {
	rp := replay(t, oldHistory(t))
	rp.TrailerJSON = []byte(`{"consumers":"many"}`)
	if _, err := Recheck(rp); !errors.Is(err, metrics.ErrHistoryCorrupt) || !strings.Contains(err.Error(), "trailer") {
		t.Fatalf("err %v", err)
	}
	rp.HeaderJSON = []byte(`{"expect":{"MaxInDoubt":"x"}}`)
	if _, err := FromReplay(rp); !errors.Is(err, metrics.ErrHistoryCorrupt) || !strings.Contains(err.Error(), "header") {
		t.Fatalf("err %v", err)
	}
}
