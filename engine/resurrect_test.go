package engine

import (
	"bytes"
	"context"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// resurrectingCluster plays rabbitmq-server#12366 over fakeCluster: the
// member of a node that is down while the queue is deleted keeps the old
// queue's messages, and when the node starts again they come back into
// the queue declared again under the same name.
type resurrectingCluster struct {
	*fakeCluster
	kept map[int]int // seq → copies the down member kept
}

func (c *resurrectingCluster) DeleteQueue(ctx context.Context, t scenario.Target, q string) (int, error) {
	c.cmu.Lock()
	anyDown := false
	for _, d := range c.down {
		anyDown = anyDown || d
	}
	c.cmu.Unlock()
	if anyDown {
		c.fakeBroker.mu.Lock()
		c.kept = map[int]int{}
		for seq, n := range c.fakeBroker.stored {
			c.kept[seq] = n
		}
		c.fakeBroker.mu.Unlock()
	}
	return c.fakeCluster.DeleteQueue(ctx, t, q)
}

func (c *resurrectingCluster) Start(ctx context.Context, t scenario.Target) error {
	if err := c.fakeCluster.Start(ctx, t); err != nil {
		return err
	}
	for seq, n := range c.kept {
		for range n {
			c.fakeBroker.store(seq)
		}
	}
	c.kept = nil
	return nil
}

// bufferSink keeps each burst's history in memory.
type bufferSink struct{ bufs []*bytes.Buffer }

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func (s *bufferSink) open(int, *scenario.ModeResult) (io.WriteCloser, error) {
	b := &bytes.Buffer{}
	s.bufs = append(s.bufs, b)
	return nopCloser{b}, nil
}

// rabbitmq-server#12366 as the draft scenario quorum-replica-redeclare
// plays it: every order confirmed, then after the burst rmq3 stopped, the
// queue deleted (with all 200 orders) and declared again, rmq3 started,
// and its member brings the old messages back. All 200 are delivered from
// the queue declared again: resurrected, not confirmed and not lost, and
// the run fails with the issue named. The history alone gives the same
// counts and ids (rmqtorture check).
func TestResurrectedAfterRedeclareFails(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    broker: {nodes: 3}
    queue: {type: quorum, settle_before_burst: 0s}
    load: {messages: 200, modes: [confirm-window], window: 20}
    faults:
      - {action: stop, node: 3, after_burst: 10ms, manual_recovery: true}
      - {action: delete-queue, after_burst: 20ms, down: 10ms}
      - {action: start, after_burst: 60ms}
`)
	c := &resurrectingCluster{fakeCluster: newFakeCluster()}
	tr := &fakeTraffic{b: c.fakeBroker}
	sink := &bufferSink{}
	r := &Runner{Ports: PortsOf(c), Traffic: tr, Log: newRunner(nil, nil).Log, RunID: "t1", History: sink.open}
	res, _ := r.RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
	if got := strings.Join(c.ops, " "); got != "stop delete rmqt.t1.confirm-window start" {
		t.Fatalf("ops %q", got)
	}
	if got := strings.Join(tr.declared, " "); got != "rmqt.t1.confirm-window rmqt.t1.confirm-window" {
		t.Fatalf("declared %q", got)
	}
	want := metrics.Counts{Sent: 200, Resurrected: 200, Delivered: 200, Deliveries: 200}
	if res.Counts != want || !reflect.DeepEqual(res.IDs.Resurrected, []metrics.Range{{First: 0, Last: 199}}) || *res.Faults[1].RemovedMessages != 200 {
		t.Fatalf("counts\n got %+v\nwant %+v\nids %+v removed %d", res.Counts, want, res.IDs, *res.Faults[1].RemovedMessages)
	}
	wantVerdict := scenario.Verdict{Status: scenario.Fail, Reasons: []string{
		"unexpected: 200 messages deleted with the queue by delete-queue were delivered after it was declared again (rabbitmq-server#12366)"}}
	if !reflect.DeepEqual(res.Verdict, wantVerdict) {
		t.Fatalf("verdict %+v", res.Verdict)
	}
	if len(sink.bufs) != 1 {
		t.Fatalf("%d histories", len(sink.bufs))
	}
	hr, err := metrics.NewHistoryReader(bytes.NewReader(sink.bufs[0].Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	rp, err := metrics.ReplayHistory(hr)
	if err != nil {
		t.Fatal(err)
	}
	c2, ids2, err := rp.Ledger.Reconcile(rp.Drained)
	if err != nil || len(rp.Inconsistencies) > 0 || c2 != res.Counts || !reflect.DeepEqual(ids2, res.IDs) {
		t.Fatalf("replayed (%v, %q)\n%+v %+v\nrun\n%+v %+v", err, rp.Inconsistencies, c2, ids2, res.Counts, res.IDs)
	}
}

// The same steps with no member keeping the old messages: all 200 orders
// went with the queue, lost and explained by the scenario's own delete,
// and nothing is resurrected.
func TestRedeclareWithoutResurrectionPasses(t *testing.T) {
	f := mustParse(t, `version: 1
scenarios:
  - name: t
    broker: {nodes: 3}
    queue: {type: quorum, settle_before_burst: 0s}
    load: {messages: 200, modes: [confirm-window], window: 20}
    faults:
      - {action: stop, node: 3, after_burst: 10ms, manual_recovery: true}
      - {action: delete-queue, after_burst: 20ms, down: 10ms}
      - {action: start, after_burst: 60ms}
`)
	c := newFakeCluster()
	r := &Runner{Ports: PortsOf(c), Traffic: &fakeTraffic{b: c.fakeBroker}, Log: newRunner(nil, nil).Log, RunID: "t1"}
	res, _ := r.RunMode(context.Background(), &f.Scenarios[0], scenario.ConfirmWindow)
	if res.Resurrected != 0 || res.Lost != 200 || res.RemovedByScenario != 200 || res.Verdict.Status != scenario.Pass {
		t.Fatalf("resurrected %d lost %d removed %d verdict %+v", res.Resurrected, res.Lost, res.RemovedByScenario, res.Verdict)
	}
}

// An id published again after the delete returned is not resurrected when
// delivered, though an old copy of it came back too: its copies are a
// duplicate explained by the republish. Ids 0–2 acked before the delete,
// 3 in doubt then, 4 still awaiting its confirm; after it, 3 republished
// and acked, 4 acked. Every id is delivered (3 twice: the old copy and the
// republished one): 0–2 resurrected, 3 and 4 confirmed.
func TestRepublishedAfterDeleteIsNotResurrected(t *testing.T) {
	in, b := testInjector(t, 0)
	l := metrics.NewLedger("q-", 5)
	in.ledger, in.queue = l, "q"
	in.redeclare = func(context.Context) error { return nil }
	settle := func(seq int, ack bool) {
		t.Helper()
		if err := l.Settle(seq, ack); err != nil {
			t.Fatal(err)
		}
	}
	for seq := range 5 {
		l.Published(seq, true)
	}
	for seq := range 3 {
		settle(seq, true)
	}
	l.MarkInDoubt(3)
	fault := scenario.Fault{Action: scenario.DeleteQueue, Down: scenario.Duration(time.Millisecond)}
	rec, err := in.inject(context.Background(), &fault, "test")
	if err != nil || rec.RemovedMessages == nil || !reflect.DeepEqual(b.ops, []string{"delete q"}) {
		t.Fatalf("delete-queue: %v, record %+v, ops %v", err, rec, b.ops)
	}
	settle(4, true)
	l.Published(3, true)
	settle(3, true)
	for _, d := range []struct{ seq, attempt int }{{0, 1}, {1, 1}, {2, 1}, {3, 1}, {3, 2}, {4, 1}} {
		l.DeliveredAttempt(l.MessageID(d.seq), false, d.attempt)
	}
	c, ids, err := l.Reconcile(true)
	if err != nil {
		t.Fatal(err)
	}
	want := metrics.Counts{Sent: 5, Resurrected: 3, Confirmed: 2, WentInDoubt: 1, Republished: 1, Delivered: 5, Deliveries: 6, Duplicates: 1, DuplicatesFromRepublish: 1}
	if c != want || !reflect.DeepEqual(ids.Resurrected, []metrics.Range{{First: 0, Last: 2}}) || !reflect.DeepEqual(ids.Duplicated, []metrics.Range{{First: 3, Last: 3}}) {
		t.Fatalf("counts\n got %+v\nwant %+v\nids %+v", c, want, ids)
	}
	v := scenario.Judge(scenario.ConfirmWindow, c, scenario.Observed{}, scenario.Expect{}, scenario.Conditions{})
	if v.Status != scenario.Fail || len(v.Reasons) != 1 || v.Reasons[0] != "unexpected: 3 messages deleted with the queue by delete-queue were delivered after it was declared again (rabbitmq-server#12366)" {
		t.Fatalf("verdict %+v", v)
	}
}
