package reports

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// consumerSection writes what live consumers measured (nothing without
// them): deliveries and how they were settled, crashes and what they left
// unacknowledged, redeliveries apart from publisher duplicates, and the
// per-message histograms of deliveries, retries and x-death counts.
func consumerSection(w io.Writer, m scenario.ModeResult) {
	c := m.Consumers
	if c == nil {
		return
	}
	p := func(format string, a ...any) { fmt.Fprintf(w, format, a...) }
	p("\nLive consumers: %d (prefetch %d, ack every %d, on delivery: %s, processing delay %s ms): %s deliveries (%s flagged redelivered); %s acked, %s nack-requeued, %s rejected, %s retried, %s parked in the dead-letter queue; reconnects: %d.\n",
		c.Count, c.Prefetch, c.AckEvery, c.OnDelivery, ms(c.ProcessingDelayMS), num(c.Deliveries), num(c.RedeliveredFlagged),
		num(c.Acked), num(c.NackedRequeue), num(c.Rejected), num(c.Retried), num(c.Parked), c.Reconnects)
	if c.BrokerCancels > 0 {
		p("\nThe broker cancelled live consumers %d times (basic.cancel: their queue was deleted or the node holding it went down; rabbitmq-server#4613); each reconnected. Not a lost connection.\n", c.BrokerCancels)
	}
	if c.EndToEndLatency.Count > 0 {
		p("\nEnd-to-end latency (publish call → delivery to a live consumer): %s.\n", latencyOver(c.EndToEndLatency, "deliveries"))
	}
	if c.Crashes > 0 {
		p("\nConsumer crashes: %d, leaving %s processed deliveries unacknowledged; the broker handed them out again: %s redeliveries of ids already processed (the application saw them twice; not publisher duplicates, which are %s).\n",
			c.Crashes, num(c.UnackedAtCrash), num(m.Redeliveries), num(m.Duplicates))
	}
	if len(c.DeliveriesPerConsumer) > 1 {
		per := make([]string, len(c.DeliveriesPerConsumer))
		for i, n := range c.DeliveriesPerConsumer {
			per[i] = fmt.Sprintf("consumer %d: %s", i, num(n))
		}
		p("\nDeliveries per consumer: %s; %s deliveries went to a different consumer than the one before.\n", strings.Join(per, ", "), num(c.ConsumerChanges))
	}
	if c.Held > 0 {
		p("\nHeld: %s first deliveries kept for consumers.hold before they were settled.\n", num(c.Held))
	}
	if c.RetryLoopsCut > 0 {
		p("\nRetry loops cut: %s messages never reached max_retries by their x-death count (`retry_count_from: x-death`; from RabbitMQ 4.0 the broker does not add to an x-death header a client republishes, so the count stays 1: rabbitmq-server#11331); rmqtorture parked each at 10 × max_retries retries by the consumer's own header. An application counting x-death would retry them for ever.\n", num(c.RetryLoopsCut))
	}
	if c.GaveUp > 0 {
		p("\nGave up: %s deliveries rejected at consumers.max_deliveries (the application's own bound).\n", num(c.GaveUp))
	}
	for _, reason := range c.ChannelCloses {
		p("\nConsumer close reason: %s\n", reason)
	}
	if m.DeadLettered > 0 || m.RetryDeliveries > 0 {
		p("\nDead-lettered: %s messages found in the dead-letter queue; %s deliveries were retry copies a consumer republished (not duplicates).\n", num(m.DeadLettered), num(m.RetryDeliveries))
	}
	hist := func(title string, h map[string]int) {
		if len(h) == 0 {
			return
		}
		p("\n%s: %s.\n", title, histText(h))
	}
	hist("Deliveries per message to live consumers (deliveries × messages)", c.DeliveriesPerMessage)
	hist("Own retry header ("+scenario.RetryHeader+") when parked (retries × messages)", c.RetriesAtPark)
	hist("x-death count when parked (count × messages)", c.XDeathCountAtPark)
	if n := len(c.Errors); n > 0 {
		// Reconnect attempts while the broker is down repeat themselves:
		// the first few say it.
		p("\nConsumer errors (%d kept", n)
		if n > 3 {
			p(", first 3 shown")
		}
		p("):\n\n")
		for _, e := range c.Errors[:min(n, 3)] {
			p("- %s\n", e)
		}
	}
}

// histText renders a value → messages histogram in value order: "4 × 100, 5 × 2".
func histText(h map[string]int) string {
	keys := make([]int, 0, len(h))
	for k := range h {
		n, _ := strconv.Atoi(k)
		keys = append(keys, n)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d × %s", k, num(h[strconv.Itoa(k)]))
	}
	return strings.Join(parts, ", ")
}

// faultExtra describes a fault record's repeat, jitter and crash details
// ("" when none).
func faultExtra(f scenario.FaultRecord) string {
	var parts []string
	if f.Firing > 0 {
		parts = append(parts, fmt.Sprintf("firing %d", f.Firing))
	}
	if f.JitterMS > 0 {
		parts = append(parts, fmt.Sprintf("jitter %s ms", ms(f.JitterMS)))
	}
	if spec, _ := f.Action.Spec(); spec.CrashesConsumer {
		parts = append(parts, fmt.Sprintf("%s processed deliveries left unacknowledged", num(f.UnackedAtCrash)))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
