package engine

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// events builds a timeline from (ms, event) pairs: typed fields only, no
// Detail, so a change of an event's wording cannot change what is derived.
func events(t0 time.Time, es ...any) []metrics.Event {
	var out []metrics.Event
	for i := 0; i < len(es); i += 2 {
		ms := es[i].(int)
		e := es[i+1].(metrics.Event)
		e.At, e.AtMS = t0.Add(time.Duration(ms)*time.Millisecond), float64(ms)
		out = append(out, e)
	}
	return out
}

// typed is an event of kind with its typed fields from e.
func typed(kind metrics.EventKind, e metrics.Event) metrics.Event { e.Kind = kind; return e }

// Typed events of the timelines below.
var (
	kindOnly  = func(k metrics.EventKind) metrics.Event { return metrics.Event{Kind: k} }
	connected = func(epoch metrics.Epoch, publisher, connection int) metrics.Event {
		return metrics.Event{Kind: metrics.EvConnected, Epoch: epoch, Publisher: publisher, Connection: connection}
	}
	faultEv = func(k metrics.EventKind, a scenario.Action) metrics.Event {
		return metrics.Event{Kind: k, Action: string(a), Target: "broker"}
	}
)

func f64(v float64) *float64 { return &v }

// A kill, a pause with a block inside it, and a restart, as the injector
// records them: each fault's state lasts until broker-ready; recovery steps
// are timed from the fault event, which for kill and restart is the start
// of their call (their effect begins during it: streadway/amqp#421), and
// restart's container is running when its call returns.
func TestSeriesStatesAndRecoveries(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := events(t0,
		0, kindOnly(metrics.EvBurstStart),
		0, connected(1, 1, 1),
		900, faultEv(metrics.EvTrigger, scenario.Kill),
		900, faultEv(metrics.EvFault, scenario.Kill),
		// The old connection's first confirm, arriving just after the kill
		// call started: not the recovery's first confirm.
		902, typed(metrics.EvFirstProgress, metrics.Event{Epoch: 1, Publisher: 1, Connection: 1, Progress: metrics.ProgressConfirm}),
		950, typed(metrics.EvConnectionLost, metrics.Event{Epoch: 1, Publisher: 1, Connection: 1}),
		6000, faultEv(metrics.EvBrokerStarted, scenario.Start),
		7000, kindOnly(metrics.EvBrokerReady),
		7500, connected(2, 1, 2),
		7550, typed(metrics.EvFirstProgress, metrics.Event{Epoch: 2, Publisher: 1, Connection: 2, Progress: metrics.ProgressPublish}),
		7600, typed(metrics.EvFirstProgress, metrics.Event{Epoch: 2, Publisher: 1, Connection: 2, Progress: metrics.ProgressConfirm}),
		8000, faultEv(metrics.EvTrigger, scenario.Pause),
		8100, faultEv(metrics.EvFault, scenario.Pause),
		8200, typed(metrics.EvBlocked, metrics.Event{Epoch: 2, Publisher: 1, Connection: 2}),
		8400, typed(metrics.EvUnblocked, metrics.Event{Epoch: 2, Publisher: 1, Connection: 2}),
		9000, faultEv(metrics.EvBrokerStarted, scenario.Unpause),
		9100, kindOnly(metrics.EvBrokerReady),
		9500, faultEv(metrics.EvTrigger, scenario.Restart),
		9500, faultEv(metrics.EvFault, scenario.Restart),
		9900, faultEv(metrics.EvBrokerStarted, scenario.Restart),
		10000, kindOnly(metrics.EvBrokerReady),
		11000, kindOnly(metrics.EvBurstEnd),
	)
	faults := []scenario.FaultRecord{
		{Action: scenario.Kill, AtMS: 900, InjectMS: 0, CallMS: 100},
		{Action: scenario.Pause, AtMS: 8000, InjectMS: 100},
		{Action: scenario.Start, AtMS: 8500}, // a recovery step: no fault event of its own
		{Action: scenario.Restart, AtMS: 9500, InjectMS: 0, CallMS: 400},
	}
	// The backlog: an id in doubt at 950 ms, republished, confirmed at 7800 ms.
	s := seriesWithBacklog(t, t0, 950, 7800)

	recoveries(faults, ev, s, true)
	want := []*scenario.Recovery{
		{ContainerRunningMS: f64(5100), AMQPAcceptingMS: f64(6100), PublisherReconnectedMS: f64(6600), FirstConfirmMS: f64(6700), BacklogDrainedMS: f64(6900)},
		// Paused: the publisher never reconnected before the next fault.
		{ContainerRunningMS: f64(900), AMQPAcceptingMS: f64(1000)},
		nil,
		{ContainerRunningMS: f64(400), AMQPAcceptingMS: f64(500)},
	}
	for i := range faults {
		if !reflect.DeepEqual(faults[i].Recovery, want[i]) {
			t.Errorf("fault %d (%s) recovery %s, want %s", i, faults[i].Action, show(faults[i].Recovery), show(want[i]))
		}
	}

	spans := brokerSpans(applied(faults, ev), ev, 11000)
	wantSpans := []metrics.StateSpan{
		{FromMS: 900, ToMS: 7000, State: metrics.StateDown},
		{FromMS: 8100, ToMS: 9100, State: metrics.StatePaused},
		{FromMS: 9500, ToMS: 10000, State: metrics.StateDown}, // restart: from its trigger
		{FromMS: 8200, ToMS: 8400, State: metrics.StateBlocked},
	}
	if !reflect.DeepEqual(spans, wantSpans) {
		t.Errorf("spans %+v\nwant %+v", spans, wantSpans)
	}
	// Reading the fault events' actions gives the same spans.
	if got := brokerSpans(appliedFromEvents(ev), ev, 11000); !reflect.DeepEqual(got, wantSpans) {
		t.Errorf("spans from events %+v", got)
	}
	if got := reconnects(ev); !reflect.DeepEqual(got, []float64{7500}) {
		t.Errorf("reconnects %v", got)
	}
	for _, c := range []struct {
		upTo int // number of events seen so far
		want metrics.BrokerState
	}{{3, metrics.StateUp}, {4, metrics.StateDown}, {5, metrics.StateDown}, {6, metrics.StateDown}, {8, metrics.StateUp}, {14, metrics.StatePaused}, {15, metrics.StatePaused}, {17, metrics.StateUp}, {19, metrics.StateDown}, {20, metrics.StateDown}, {21, metrics.StateUp}} {
		if got := BrokerStateNow(ev[:c.upTo]); got != c.want {
			t.Errorf("state after %d events (%s): %s, want %s", c.upTo, ev[c.upTo-1].Kind, got, c.want)
		}
	}

	if got := BrokerStateNow(events(t0, 5, typed(metrics.EvBlocked, metrics.Event{Epoch: 1, Publisher: 1, Connection: 1}))); got != metrics.StateBlocked {
		t.Errorf("blocked alone: %s", got)
	}

	d := seriesOf(s, faults, ev, t0.Add(11*time.Second))
	wantBroker := []metrics.BrokerState{"down", "down", "down", "down", "down", "down", "down", "up", "paused", "down", "up"} // the kill from 900 ms
	if !reflect.DeepEqual(d.Broker, wantBroker) || !reflect.DeepEqual(d.Reconnects, []int{0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0}) {
		t.Errorf("broker %v reconnects %v", d.Broker, d.Reconnects)
	}
	// Bucket 0 (0–1000 ms) is down as a whole, but the chart shades from
	// the exact spans: the kill took effect at 900 ms, not at 0.
	wantStates := []metrics.StateSpan{
		{FromMS: 900, ToMS: 7000, State: metrics.StateDown},
		{FromMS: 8100, ToMS: 9100, State: metrics.StatePaused},
		{FromMS: 9500, ToMS: 10000, State: metrics.StateDown},
		{FromMS: 8200, ToMS: 8400, State: metrics.StateBlocked},
	}
	if !reflect.DeepEqual(d.States, wantStates) {
		t.Errorf("states %+v\nwant %+v", d.States, wantStates)
	}
}

// seriesWithBacklog returns a series whose backlog is one id from fromMS to toMS.
func seriesWithBacklog(t *testing.T, t0 time.Time, fromMS, toMS int) *metrics.Series {
	t.Helper()
	s := metrics.NewSeries(t0, time.Second)
	l := metrics.NewLedger("b-", 1)
	l.Attach(s)
	s.SetClock(func() time.Time { return t0.Add(time.Duration(fromMS) * time.Millisecond) })
	l.Published(0, true)
	l.MarkInDoubt(0)
	l.Published(0, true)
	s.SetClock(func() time.Time { return t0.Add(time.Duration(toMS) * time.Millisecond) })
	if err := l.Settle(0, true); err != nil {
		t.Fatal(err)
	}
	return s
}

func show(r *scenario.Recovery) string {
	if r == nil {
		return "nil"
	}
	p := func(v *float64) string {
		if v == nil {
			return "null"
		}
		return metricsMS(*v)
	}
	return "{running " + p(r.ContainerRunningMS) + ", amqp " + p(r.AMQPAcceptingMS) + ", reconnected " + p(r.PublisherReconnectedMS) + ", confirm " + p(r.FirstConfirmMS) + ", drained " + p(r.BacklogDrainedMS) + "}"
}

func metricsMS(v float64) string { return time.Duration(v * float64(time.Millisecond)).String() }

// The runner attaches a series to every burst: with one bucket spanning the
// whole run, it holds every publish, confirm and delivery, and the kill's
// down state.
func TestRunModeRecordsSeries(t *testing.T) {
	b, tr := &fakeBroker{}, &fakeTraffic{}
	r := newRunner(b, tr)
	r.Bucket = time.Hour
	var live *metrics.Series
	r.OnBurst = func(m scenario.Mode, s *metrics.Series, _ *metrics.Timeline) { live = s }
	res, _ := r.RunMode(context.Background(), testScenario(200, 50), scenario.ConfirmWindow)
	want := &metrics.SeriesData{
		BucketMS: 3_600_000, Published: []int{200}, Acked: []int{200}, Nacked: []int{0}, Returned: []int{0},
		Delivered: []int{200}, InFlight: []int{0}, Reconnects: []int{0}, Broker: []metrics.BrokerState{metrics.StateDown},
		Republished: []int{0},
	}
	// The kill's exact span depends on the clock: one down span inside the bucket.
	if st := res.Series.States; len(st) != 1 || st[0].State != metrics.StateDown || st[0].FromMS >= st[0].ToMS {
		t.Errorf("states %+v: want one down span", st)
	}
	res.Series.States = nil
	if !reflect.DeepEqual(res.Series, want) {
		t.Fatalf("series %+v\nwant %+v", res.Series, want)
	}
	if live == nil || live.Totals().Published != 200 {
		t.Errorf("OnBurst did not get the burst's series")
	}
	rec := res.Faults[0].Recovery
	if rec == nil || rec.ContainerRunningMS == nil || rec.AMQPAcceptingMS == nil || rec.PublisherReconnectedMS != nil || rec.FirstConfirmMS != nil {
		t.Errorf("recovery %s: the fake broker came back, the fake publisher logged no reconnect", show(rec))
	}
}

// Several publishers: each one's first connection is not a reconnect, even
// though epochs count every publisher's connections together.
func TestReconnectsCountOnlyLaterConnectionsOfEachPublisher(t *testing.T) {
	at := func(ms float64, e metrics.Event) metrics.Event { e.AtMS = ms; return e }
	got := reconnects([]metrics.Event{
		at(1, connected(1, 1, 1)), at(2, connected(2, 2, 1)), at(3, connected(3, 3, 1)),
		at(5, metrics.Event{Kind: metrics.EvConsumerConnected, Consumer: 1, Connection: 2}), // a consumer's, not a publisher's
		at(900, connected(4, 2, 2)),
	})
	if len(got) != 1 || got[0] != 900 {
		t.Fatalf("reconnects at %v, want [900]", got)
	}
}
