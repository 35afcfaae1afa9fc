package docker

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// Lines as RabbitMQ 4.0.5's console log prints them in `docker logs`
// (warnings wrapped in colour codes), and as the field reported them
// (rabbitmq-server#13390).
const sampleLog = "2026-11-30 09:23:47.360577+00:00 [info] <0.230.0> ra: meta data store initialised for system quorum_queues. 0 record(s) recovered\x1b[0m\n" +
	"\x1b[38;5;214m2026-11-30 09:24:08.550165+00:00 [warning] <0.456.0> Message store \"628WB79CIFDYO9LJI6DKMI09L/msg_store_persistent\": rebuilding indices from scratch\x1b[0m\n" +
	"\x1b[38;5;214m2026-11-30 09:24:08.646976+00:00 [warning] <0.466.0> Queue rmqt.9572920c.confirm-window in vhost / dropped 0/0/0 persistent messages and 0 transient messages after unclean shutdown\x1b[0m\n" +
	"2026-11-30 09:24:08.648922+00:00 [info] <0.442.0> Recovering 1 queues of type rabbit_classic_queue took 114ms\x1b[0m\n" +
	"<0.1928067.0> Restarting crashed queue 'APPLICATION_QUEUE' in vhost '/'.\n" +
	"<0.1928067.0> Queue APPLICATION_QUEUE in vhost / dropped 0/1/0 persistent messages and 2 transient messages after unclean shutdown\n" +
	"<0.1928067.0> ** Generic server <0.1928067.0> terminating\n" +
	"<0.1928067.0> ** Last message in was {basic_consume,false,<0.1928114.0>,<0.1928113.0>,\n" +
	"2026-11-30 09:30:00.000000+00:00 [error] <0.9.0> Discarding message {'$gen_cast',{deliver,x}} from <0.1.0> to <0.2.0> in an old incarnation (3) of this node (4)\n" +
	"2026-11-30 09:30:01.000000+00:00 [info] <0.466.0> Queue rmqt.x.classic in vhost / dropped 5 persistent messages and 0 transient messages after unclean shutdown\n" +
	// A distribution blip between rmq1 and rmq2 (erlang:disconnect_node),
	// RabbitMQ 4.0.5, 3 nodes.
	"\x1b[38;5;160m2026-12-04 20:45:28.191674+00:00 [error] <0.349.0> Mnesia(rabbit@rmq1): ** ERROR ** mnesia_event got {inconsistent_database, running_partitioned_network, rabbit@rmq2}\x1b[0m\n" +
	"\x1b[38;5;160m2026-12-04 20:45:28.198522+00:00 [error] <0.503.0> Partial partition detected:\x1b[0m\n" +
	"\x1b[38;5;160m2026-12-04 20:45:28.198522+00:00 [error] <0.503.0>  * We saw DOWN from rabbit@rmq2\x1b[0m\n" +
	"\x1b[38;5;160m2026-12-04 20:45:29.247869+00:00 [error] <0.349.0> Mnesia(rabbit@rmq1): ** ERROR ** mnesia_event got {inconsistent_database, running_partitioned_network, rabbit@rmq3}\x1b[0m\n"

func TestScanBrokerLog(t *testing.T) {
	got, err := ScanBrokerLog(strings.NewReader(sampleLog))
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		sig       string
		count     int
		first     string
		dropped   int
		hasSource bool
	}
	var rows []row
	for _, f := range got {
		rows = append(rows, row{f.Signature, f.Count, f.FirstLine, f.Messages, strings.Contains(f.Meaning, "#") || f.Signature == "process-crashed"})
	}
	want := []row{
		{"restarting-crashed-queue", 1, "<0.1928067.0> Restarting crashed queue 'APPLICATION_QUEUE' in vhost '/'.", 0, true},
		// Colour codes stripped; 0/0/0 + 0/1/0 + 2 + 5 messages dropped over three lines.
		{"dropped-after-unclean-shutdown", 3, "2026-11-30 09:24:08.646976+00:00 [warning] <0.466.0> Queue rmqt.9572920c.confirm-window in vhost / dropped 0/0/0 persistent messages and 0 transient messages after unclean shutdown", 8, true},
		{"discarding-message", 1, "2026-11-30 09:30:00.000000+00:00 [error] <0.9.0> Discarding message {'$gen_cast',{deliver,x}} from <0.1.0> to <0.2.0> in an old incarnation (3) of this node (4)", 0, true},
		{"process-crashed", 1, "<0.1928067.0> ** Generic server <0.1928067.0> terminating", 0, true},
		{"partitioned-metadata-store", 2, "2026-12-04 20:45:28.191674+00:00 [error] <0.349.0> Mnesia(rabbit@rmq1): ** ERROR ** mnesia_event got {inconsistent_database, running_partitioned_network, rabbit@rmq2}", 0, true},
		{"partial-partition", 1, "2026-12-04 20:45:28.198522+00:00 [error] <0.503.0> Partial partition detected:", 0, true},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("findings\n got %+v\nwant %+v", rows, want)
	}
	// A log with none of them (a clean boot rebuilds the message store
	// too): no findings, not an empty finding.
	none, err := ScanBrokerLog(strings.NewReader(strings.Join(strings.Split(sampleLog, "\n")[:2], "\n")))
	if err != nil || none != nil {
		t.Fatalf("clean log: %+v %v", none, err)
	}
}

// A long first line is cut at a rune boundary; a read error returns what
// was found before it, with the error.
func TestScanBrokerLogLimits(t *testing.T) {
	long := "Restarting crashed queue '" + strings.Repeat("é", 400) + "'\n"
	got, err := ScanBrokerLog(strings.NewReader(long))
	if err != nil || len(got) != 1 || len(got[0].FirstLine) > maxFindingLine+len("…") || !strings.HasSuffix(got[0].FirstLine, "é…") {
		t.Fatalf("%+v %v", got, err)
	}
	boom := errors.New("connection reset")
	got, err = ScanBrokerLog(io.MultiReader(strings.NewReader("** Generic server <0.1.0> terminating\n"), iotest.ErrReader(boom)))
	if !errors.Is(err, boom) || !reflect.DeepEqual(got, []scenario.BrokerLogFinding{{Signature: "process-crashed", Meaning: logSignatures[3].meaning, Count: 1, FirstLine: "** Generic server <0.1.0> terminating"}}) {
		t.Fatalf("%+v %v", got, err)
	}
}
