package broker

import (
	"context"
	"github.com/docker/docker/client"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/go-connections/nat"
	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/engine"
	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// nacks records basic.nack calls made through amqp.Delivery.
type nacks struct{ requeue []bool }

func (n *nacks) Ack(uint64, bool) error          { return nil }
func (n *nacks) Reject(uint64, bool) error       { return nil }
func (n *nacks) Nack(_ uint64, _, rq bool) error { n.requeue = append(n.requeue, rq); return nil }

// on_delivery nack-requeue and reject settle each delivery with
// basic.nack (requeue true, false) and count it; process records it in the
// ledger and the consumer stats.
func TestConsumerSettleNackAndReject(t *testing.T) {
	ledger := metrics.NewLedger("c-", 1)
	ledger.Published(0, false)
	for _, c := range []struct {
		on   scenario.ConsumerAction
		want []bool
	}{{scenario.ConsumerNackRequeue, []bool{true}}, {scenario.ConsumerReject, []bool{false}}} {
		set := &consumerSet{a: &AMQP{Log: quiet}, perMessage: map[string]int{}, endToEnd: metrics.NewLatency(),
			plan: engine.ConsumePlan{Ledger: ledger, Consumers: scenario.Consumers{OnDelivery: c.on}}}
		con := &consumer{set: set}
		ack := &nacks{}
		d := amqp.Delivery{Acknowledger: ack, MessageId: "c-0", DeliveryTag: 1, Redelivered: true}
		con.process(d, d.Timestamp)
		if err := con.settle(&consumerSession{c: con}, d); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ack.requeue, c.want) {
			t.Errorf("%s: nack requeue %v, want %v", c.on, ack.requeue, c.want)
		}
		st := set.stats
		if st.Deliveries != 1 || st.RedeliveredFlagged != 1 || st.NackedRequeue+st.Rejected != 1 || set.perMessage["c-0"] != 1 {
			t.Errorf("%s: stats %+v", c.on, st)
		}
	}
	if got := histogram(countValues(map[string]int{"a": 1, "b": 2, "c": 1})); !reflect.DeepEqual(got, map[string]int{"1": 2, "2": 1}) {
		t.Errorf("histogram %v", got)
	}
	if histogram(nil) != nil {
		t.Error("empty histogram not nil")
	}
	set := &consumerSet{a: &AMQP{Log: quiet}}
	for range 25 {
		set.errorf("e %d", 1)
	}
	if len(set.stats.Errors) != 20 {
		t.Errorf("%d errors kept, want 20", len(set.stats.Errors))
	}
}

// The broker's AMQP port is read from the container's published ports:
// IPv4 loopback or any address, never an IPv6-only binding.
func TestReadPort(t *testing.T) {
	c := &Container{Name: "b"}
	info := container.InspectResponse{NetworkSettings: &container.NetworkSettings{}}
	info.NetworkSettings.Ports = nat.PortMap{amqpPort: {{HostIP: "::1", HostPort: "1"}, {HostIP: "127.0.0.1", HostPort: "5999"}}}
	if err := c.readPort(info); err != nil || c.URL() != "amqp://guest:guest@127.0.0.1:5999/" {
		t.Errorf("%v %s", err, c.URL())
	}
	info.NetworkSettings.Ports = nat.PortMap{amqpPort: {{HostIP: "::1", HostPort: "1"}}}
	if err := c.readPort(info); err == nil || !strings.Contains(err.Error(), "-p 127.0.0.1:5672:5672") {
		t.Errorf("IPv6 only: %v", err)
	}
	if err := c.readPort(container.InspectResponse{}); err == nil {
		t.Error("no network settings accepted")
	}
	if p, err := freePort(""); err != nil || p <= 0 {
		t.Errorf("free port %d %v", p, err)
	}
}

// Without a Docker Engine every container call fails with an error that
// names the container, and none hangs.
func TestContainerCallsWithoutDocker(t *testing.T) {
	cli, err := client.NewClientWithOpts(client.WithHost("tcp://"+strings.TrimSuffix(strings.TrimPrefix(closedPort(t), "amqp://guest:guest@"), "/")), client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	c := &Container{cli: cli, log: quiet, ID: "x", Name: "rmqt-x", Owned: true}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	bt := scenario.BrokerTarget()
	for name, call := range map[string]func() error{
		"kill": func() error { return c.Kill(ctx, bt, "SIGKILL") }, "stop": func() error { return c.Stop(ctx, bt, time.Second) },
		"restart": func() error { return c.Restart(ctx, bt, time.Second) }, "pause": func() error { return c.Pause(ctx, bt) },
		"unpause": func() error { return c.Unpause(ctx, bt) }, "disconnect": func() error { return c.Disconnect(ctx, bt) },
		"remove": func() error { return c.Remove(ctx) },
	} {
		if err := call(); err == nil || !strings.Contains(err.Error(), "rmqt-x") {
			t.Errorf("%s: %v, want an error naming the container", name, err)
		}
	}
	if _, err := Leftovers(ctx, cli); err == nil {
		t.Error("leftovers without Docker")
	}
	if err := RemoveLeftover(ctx, cli, "x"); err == nil {
		t.Error("remove leftover without Docker")
	}
}

// nack-requeue with consumers.max_deliveries: requeued until the message's
// max_deliveries-th delivery, which the consumer rejects (the application's
// own bound); deliveries are counted per consumer, and a delivery to another
// consumer than the one before is a consumer change.
func TestConsumerMaxDeliveriesAndConsumerChanges(t *testing.T) {
	ledger := metrics.NewLedger("c-", 1)
	ledger.Published(0, false)
	set := &consumerSet{a: &AMQP{Log: quiet}, perMessage: map[string]int{}, endToEnd: metrics.NewLatency(),
		perConsumer: make([]int, 2), lastConsumer: -1,
		plan: engine.ConsumePlan{Ledger: ledger, Consumers: scenario.Consumers{OnDelivery: scenario.ConsumerNackRequeue, MaxDeliveries: 3}}}
	cons := []*consumer{{set: set, index: 0}, {set: set, index: 1}}
	ack := &nacks{}
	for i, by := range []int{0, 0, 1} {
		d := amqp.Delivery{Acknowledger: ack, MessageId: "c-0", DeliveryTag: uint64(i + 1)}
		cons[by].process(d, d.Timestamp)
		if err := cons[by].settle(&consumerSession{c: cons[by]}, d); err != nil {
			t.Fatal(err)
		}
	}
	st := set.stats
	if !reflect.DeepEqual(ack.requeue, []bool{true, true, false}) || st.NackedRequeue != 2 || st.Rejected != 1 || st.GaveUp != 1 {
		t.Fatalf("requeue %v, stats %+v", ack.requeue, st)
	}
	if !reflect.DeepEqual(set.perConsumer, []int{2, 1}) || st.ConsumerChanges != 1 {
		t.Fatalf("per consumer %v, changes %d; want [2 1], 1", set.perConsumer, st.ConsumerChanges)
	}
}
