package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// The field-report additions validate: the broker configuration a run
// wrote, late confirms, and what live consumers measured per consumer.
func TestSchemaAcceptsConfigFields(t *testing.T) {
	r := fullResult()
	r.BrokerConfig = map[string]string{"consumer_timeout": "5000", "disk_free_limit.absolute": "1GB"}
	r.BrokerAdvancedConfig = map[string]int{"channel_tick_interval": 1000}
	m := &r.Modes[1]
	m.Counts.LateConfirms = 3
	m.Consumers = &scenario.ConsumerStats{Count: 2, Prefetch: 10, AckEvery: 1, OnDelivery: scenario.ConsumerAck,
		Deliveries: 201, DeliveriesPerConsumer: []int{80, 121}, ConsumerChanges: 1, Held: 1, GaveUp: 0,
		ChannelCloses: []string{"channel closed by broker: 406 PRECONDITION_FAILED - delivery acknowledgement on channel 1 timed out"}}
	var buf bytes.Buffer
	if err := JSON(&buf, r); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"broker_config"`, `"broker_advanced_config"`, `"late_confirms": 3`, `"deliveries_per_consumer"`, `"consumer_changes": 1`, `"held": 1`} {
		if !strings.Contains(buf.String(), key) {
			t.Errorf("result.json lacks %s", key)
		}
	}
	if err := Validate(buf.Bytes()); err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
}

// The report names the broker configuration the run wrote, late confirms,
// deliveries per consumer and why the broker closed a consumer's channel.
func TestMarkdownConfigFields(t *testing.T) {
	r := fullResult()
	r.BrokerConfig = map[string]string{"consumer_timeout": "5000"}
	r.BrokerAdvancedConfig = map[string]int{"channel_tick_interval": 1000}
	m := &r.Modes[1]
	m.Counts.LateConfirms = 3
	m.Consumers = &scenario.ConsumerStats{Count: 2, DeliveriesPerConsumer: []int{80, 121}, ConsumerChanges: 1, Held: 1, GaveUp: 2,
		ChannelCloses: []string{"consumer 0: channel closed by broker: 406 PRECONDITION_FAILED - delivery acknowledgement on channel 1 timed out"}}
	var buf bytes.Buffer
	if err := Markdown(&buf, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"- **Broker configuration** (written before its first start): `consumer_timeout = 5000`, `{rabbit, channel_tick_interval, 1000}`\n",
		"\nLate confirms: 3 of an earlier copy, after its id was published again on the same channel when its confirm timed out, matched by delivery tag; no such copy was delivered twice.\n",
		"\nDeliveries per consumer: consumer 0: 80, consumer 1: 121; 1 deliveries went to a different consumer than the one before.\n",
		"\nHeld: 1 first deliveries kept for consumers.hold",
		"\nGave up: 2 deliveries rejected at consumers.max_deliveries",
		"\nConsumer close reason: consumer 0: channel closed by broker: 406 PRECONDITION_FAILED",
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
