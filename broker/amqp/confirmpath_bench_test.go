package amqp

import (
	"context"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/scenario"
)

// ackingChannel acks every publish at once, as a broker confirming without
// delay would: amqp091-go's listener, the window and the reader are real.
type ackingChannel struct {
	tag      uint64
	confirms chan amqp.Confirmation
}

func (c *ackingChannel) PublishWithContext(context.Context, string, string, bool, bool, amqp.Publishing) error {
	c.tag++
	c.confirms <- amqp.Confirmation{DeliveryTag: c.tag, Ack: true}
	return nil
}

// BenchmarkConfirmPathWindow runs one confirm-window(1000) publish loop and
// its confirm reader against a channel that acks every publish at once: the
// publisher's own cost per message (take, window slot, track, message
// build, confirm matching, ledger, latency, statistics), ns/op, B/op,
// allocs/op; no broker.
func BenchmarkConfirmPathWindow(b *testing.B) {
	const window = 1000
	n := b.N
	p := testPublisher(n, scenario.RepublishNone)
	p.p.Window = window
	r := newConfirmReader(p, testSession, window)
	ch := &ackingChannel{confirms: make(chan amqp.Confirmation, window)}
	go r.run(ch.confirms, make(chan amqp.Return))
	w := &watcher{p: p}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range n {
		seq, ok := p.take()
		if !ok {
			b.Fatal("nothing to take")
		}
		if got, err := p.acquire(ctx, r, seq); !got || err != nil {
			b.Fatal("acquire", got, err)
		}
		if err := p.sendTracked(ctx, ch, w, r, ch.tag+1, seq); err != nil {
			b.Fatal(err)
		}
	}
	close(ch.confirms)
	<-r.done
	b.StopTimer()
	if a := p.p.Ledger.Sent(); a != n {
		b.Fatalf("sent %d of %d", a, n)
	}
}
