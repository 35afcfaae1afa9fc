package scenario

import (
	"slices"
	"testing"
)

// Stream-only settings are refused elsewhere, and AMQP-only settings on a
// stream, each at its file:line:col.
func TestStreamValidation(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"deduplication on a quorum queue",
			head + "    queue: {type: quorum, deduplication: true}\n    load: {messages: 10}\n",
			[]string{"s.yaml:4:42: scenarios[0].queue.deduplication: deduplication is a stream feature (a named stream producer): set queue.type: stream"}},
		{"deduplication without a type (quorum by default)",
			head + "    queue: {deduplication: true}\n    load: {messages: 10}\n",
			[]string{"s.yaml:4:28: scenarios[0].queue.deduplication: deduplication is a stream feature (a named stream producer): set queue.type: stream"}},
		{"AMQP-only queue settings on a stream",
			head + "    queue:\n      type: stream\n      durable: false\n      dead_letter_queue: true\n      also_bind_type: classic\n      arguments: {x-max-length-bytes: 1000000, x-overflow: drop-head}\n    load: {messages: 10}\n",
			[]string{
				"s.yaml:6:16: scenarios[0].queue.durable: streams are always durable",
				"s.yaml:7:26: scenarios[0].queue.dead_letter_queue: a stream does not dead-letter",
				"s.yaml:8:23: scenarios[0].queue.also_bind_type: the stream publisher writes to the stream itself, not through an exchange: nothing would reach a second queue",
				"s.yaml:9:60: scenarios[0].queue.arguments.x-overflow: does not apply to a stream (only x-max-length-bytes and x-stream-max-segment-size-bytes)",
			}},
		{"AMQP-only load, consumers, faults and matrix on a stream",
			head + "    queue: {type: stream}\n    load:\n      messages: 10\n      publishers: 2\n      persistent: false\n      unroutable_every: 3\n      message_deadline: 5s\n" +
				"    consumers: {count: 1}\n    faults:\n      - {action: close-connections, published: 5}\n    matrix: {queue_types: [quorum], repeat: 2}\n",
			[]string{
				"s.yaml:7:19: scenarios[0].load.publishers: one stream producer publishes a burst (deduplication needs a single named producer)",
				"s.yaml:8:19: scenarios[0].load.persistent: a stream stores every message on disk: there is no transient publish",
				"s.yaml:9:25: scenarios[0].load.unroutable_every: not supported with queue.type: stream: a stream publish has no routing key",
				"s.yaml:10:25: scenarios[0].load.message_deadline: not supported with queue.type: stream: the stream publisher has no message deadline yet",
				"s.yaml:11:24: scenarios[0].consumers.count: live consumers of a stream are not supported yet: the drain reads the stream from its first offset after the burst",
				"s.yaml:13:18: scenarios[0].faults[0].action: close-connections acts on AMQP 0.9.1 connections; it is not supported with queue.type: stream",
				"s.yaml:14:27: scenarios[0].matrix.queue_types: a stream runs on its own: a matrix over a stream takes repeat only",
			}},
		{"a matrix cannot list stream cells",
			head + "    load: {messages: 10}\n    matrix: {queue_types: [quorum, stream]}\n",
			[]string{`s.yaml:5:36: scenarios[0].matrix.queue_types[1]: "stream" is not a queue type (quorum, classic)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("s.yaml", []byte(tc.yaml))
			var got []string
			if errs, ok := err.(Errors); ok {
				for _, e := range errs {
					got = append(got, e.Error())
				}
			} else if err != nil {
				got = []string{err.Error()}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("errors\n got: %q\nwant: %q", got, tc.want)
			}
		})
	}
}

// A valid stream scenario passes, and passes again through Validate (the
// path flag overrides take), defaults and all.
func TestStreamScenarioValid(t *testing.T) {
	f, err := Parse("s.yaml", []byte(head+"    queue: {type: stream, deduplication: true, arguments: {x-max-length-bytes: 1000000}}\n"+
		"    load: {messages: 10, modes: [fire-and-forget, confirm-window]}\n    faults: [{action: kill, published: 5}]\n    matrix: {repeat: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := &f.Scenarios[0]
	if errs := Validate("s.yaml", s); errs != nil {
		t.Fatal(errs)
	}
	if got, want := s.Topology(), "matrix: stream queues × persistent messages, 2 runs each, durable, mandatory"; got != want {
		t.Fatalf("topology %q, want %q", got, want)
	}
	s.Matrix.Repeat = 0
	if got, want := s.Topology(), "stream over the stream protocol; named producer (deduplication by publishing id)"; got != want {
		t.Fatalf("topology %q, want %q", got, want)
	}
}
