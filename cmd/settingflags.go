package cmd

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// The settings people reach for without writing a scenario file: each
// flag overrides one scenario field, then the scenario is checked again
// (apply), so a bad value is refused with the flag's name, exit 2. Their
// help names the equivalents in RabbitMQ's PerfTest
// (https://perftest.rabbitmq.com) and omq (https://github.com/rabbitmq/omq).

// settingFlags defines the flags on c.
func (o *runOpts) settingFlags(c *cobra.Command) {
	fl := c.Flags()
	fl.Float64VarP(&o.rate, "rate", "r", 0, "publish at most this many msg/s, all publishers together; 0: as fast as possible (overrides load.rate; PerfTest's and omq's --rate/-r limit each publisher, this one all together)")
	fl.DurationVarP(&o.duration, "duration", "z", 0, "publish for this long at --rate (or load.rate): the burst is rate × duration orders, e.g. -r 2000 -z 30s is 60,000 (overrides load.messages; not with --messages; PerfTest --time/-z, omq --time/-z)")
	fl.IntVarP(&o.size, "size", "s", 0, "every message body exactly this many bytes, 0–1048576 (overrides load.message_size_bytes; default: the bare JSON order, ~90 bytes; PerfTest --size/-s, omq --size/-s)")
	fl.IntVarP(&o.publishers, "publishers", "x", 0, "publishers sharing the burst, one connection each, 1–64 (overrides load.publishers; PerfTest --producers/-x, omq --publishers/-x)")
	fl.IntVarP(&o.consumers, "consumers", "y", 0, "live consumers during the burst, 0–64; 0: the queue is drained after it (overrides consumers.count; PerfTest --consumers/-y, omq --consumers/-y)")
	fl.IntVar(&o.prefetch, "prefetch", 0, "each live consumer's basic.qos prefetch count, 1–65535 (overrides consumers.prefetch, default 100; needs live consumers; PerfTest --qos/-q, omq --consumer-credits)")
	fl.StringVar(&o.killAt, "kill-at", "", `when the scenario's first kill fires: a share of the burst ("50%") or a publish count ("10000") (overrides its trigger: faults[].published_percent or published; PerfTest and omq inject no faults)`)
	fl.DurationVar(&o.down, "down", 0, "how long each fault step keeps the broker down before its recovery, e.g. 5s, at most 10m (overrides faults[].down of every kill, stop, pause, disconnect, alarm, partition, quorum-loss or command step)")
	fl.StringVar(&o.queueType, "queue-type", "", "the queue under test: quorum or classic (overrides queue.type; PerfTest --quorum-queue/-qq or --queue-args x-queue-type=quorum, omq --queues quorum|classic)")
	fl.StringVar(&o.uri, "uri", "", "publish to, drain and judge this running broker instead of a container: amqp://user:password@host:5672/vhost or amqps://…; no Docker and no fault is injected (PerfTest --uri/-h, omq --uri); the password is never printed or stored; default: $RMQTORTURE_URI, which keeps the password out of the process list")
}

// setSettings sets the overrides of the setting flags that were set on s,
// unchecked but for what the scenario's own check cannot see: a value
// that reads as unset (0), or a flag the scenario has no place for.
func (o *runOpts) setSettings(c *cobra.Command, s *scenario.Scenario) error {
	fl := c.Flags()
	if fl.Changed("rate") {
		s.Load.Rate = o.rate
	}
	if fl.Changed("duration") {
		if err := o.setDuration(c, s); err != nil {
			return err
		}
	}
	if fl.Changed("size") {
		size := o.size
		s.Load.MessageSizeBytes = &size
	}
	if fl.Changed("publishers") {
		if o.publishers == 0 {
			// load.publishers 0 reads as unset (1), so the schema cannot see it.
			return errors.New("--publishers must be within 1–64, got 0")
		}
		s.Load.Publishers = o.publishers
	}
	if fl.Changed("consumers") {
		s.SetConsumers(o.consumers)
	}
	if fl.Changed("prefetch") {
		switch {
		case o.prefetch == 0:
			return errors.New("--prefetch must be within 1–65535, got 0")
		case s.Consumers.Count <= 0:
			return fmt.Errorf("--prefetch %d: scenario %q has no live consumers (consumers.count 0) for a prefetch to apply to: add --consumers N", o.prefetch, s.Name)
		}
		s.Consumers.Prefetch = o.prefetch
	}
	if fl.Changed("queue-type") {
		if err := o.setQueueType(c, s); err != nil {
			return err
		}
	}
	if fl.Changed("kill-at") {
		if err := o.setKillAt(s); err != nil {
			return err
		}
	}
	if fl.Changed("down") && s.SetDown(scenario.Duration(o.down)) == 0 {
		return fmt.Errorf("--down %s: scenario %q has no step that takes the broker down and brings it back by itself (%s)", o.down, s.Name, faultsInWords(s))
	}
	return nil
}

func (o *runOpts) setQueueType(c *cobra.Command, s *scenario.Scenario) error {
	qt := scenario.QueueType(strings.TrimSpace(o.queueType))
	switch {
	case qt != scenario.Quorum && qt != scenario.Classic:
		return fmt.Errorf("--queue-type: %q is neither quorum nor classic (a stream scenario sets queue.type: stream)%s", o.queueType,
			scenario.DidYouMean(string(qt), []string{string(scenario.Quorum), string(scenario.Classic)}))
	case c.Flags().Changed("queue-types"):
		return errors.New("--queue-type and --queue-types both set the queue type: give one (--queue-types runs every mode on each type it lists)")
	case s.Queue.Type == scenario.Stream:
		return fmt.Errorf("--queue-type %s: scenario %q publishes to a stream over the stream protocol (queue.type: stream), which a flag does not turn into a queue", qt, s.Name)
	}
	s.Queue.Type = qt
	s.Matrix.QueueTypes = nil // the flag names the one type to run on
	return nil
}

// setDuration sizes the burst as --duration at the scenario's rate (after
// --rate): rate × duration orders, rounded. A scenario that publishes as
// fast as it can has no count to derive, so it is refused, as is
// --messages beside it.
func (o *runOpts) setDuration(c *cobra.Command, s *scenario.Scenario) error {
	switch {
	case c.Flags().Changed("messages"):
		return errors.New("--duration and --messages both size the burst: give one (--duration publishes rate × duration orders)")
	case o.duration <= 0:
		return fmt.Errorf("--duration must be more than 0, got %s", o.duration)
	case s.Load.Rate <= 0:
		return fmt.Errorf("--duration %s: scenario %q publishes as fast as it can, so a time gives no number of orders: add --rate N (msg/s, all publishers together), or size the burst with --messages", o.duration, s.Name)
	}
	n := math.Round(s.Load.Rate * o.duration.Seconds())
	if n < 1 || n > scenario.MaxMessages {
		return fmt.Errorf("--duration %s at %g msg/s is %.0f orders: a burst is 1–%d orders", o.duration, s.Load.Rate, n, scenario.MaxMessages)
	}
	s.Load.Messages = int(n)
	return nil
}

// setKillAt moves the first kill step's trigger to --kill-at.
func (o *runOpts) setKillAt(s *scenario.Scenario) error {
	i := s.FirstKill()
	if i < 0 {
		return fmt.Errorf("--kill-at %s: scenario %q has no kill step to time (%s)", o.killAt, s.Name, faultsInWords(s))
	}
	v := strings.TrimSpace(o.killAt)
	if pct, ok := strings.CutSuffix(v, "%"); ok {
		p, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
		if err == nil && !math.IsNaN(p) && !math.IsInf(p, 0) {
			s.SetTrigger(i, &p, nil)
			return nil
		}
	} else if n, err := strconv.Atoi(v); err == nil {
		s.SetTrigger(i, nil, &n)
		return nil
	}
	return fmt.Errorf("--kill-at: %q is neither a share of the burst (50%%) nor a publish count (10000)", o.killAt)
}

// faultsInWords names a scenario's fault steps for a message.
func faultsInWords(s *scenario.Scenario) string {
	if len(s.Faults) == 0 {
		return "it has no fault steps"
	}
	return "its steps: " + s.FaultSummary()
}

// faultIndex matches the index of a fault step in a field path.
var faultIndex = regexp.MustCompile(`^faults\[\d+\]`)

// fieldOf reports whether path is field or lies under it.
func fieldOf(path, field string) bool {
	return path == field || strings.HasPrefix(path, field+".") || strings.HasPrefix(path, field+"[")
}

// perfTestQ refuses `run -q N` where N is a number and no scenario of f:
// PerfTest's -q is the consumers' basic.qos prefetch, rmqtorture's is
// --quiet, and without this N would be looked up as a scenario's name.
func perfTestQ(g *globalOpts, f *scenario.File, names []string) error {
	if !g.quiet {
		return nil
	}
	for _, n := range names {
		if _, err := strconv.ParseUint(n, 10, 32); err != nil {
			continue
		}
		if slices.ContainsFunc(f.Scenarios, func(s scenario.Scenario) bool { return s.Name == n }) {
			continue
		}
		return usageErr(fmt.Errorf("-q is --quiet here, and %q is no scenario: PerfTest's -q %s (the consumers' basic.qos prefetch) is --prefetch %s", n, n, n))
	}
	return nil
}
