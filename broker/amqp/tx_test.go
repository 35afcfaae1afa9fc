package amqp

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/broker/internal/amqpx"
	"github.com/rmqtorture/rmqtorture/broker/internal/traffic"
	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// A refused tx.commit is a channel error the broker sent; everything else
// (a connection error, a closed channel, a commit cut short) may have
// committed, so its messages are in doubt.
func TestCommitRefused(t *testing.T) {
	soft := func(code int, text string) *amqp.Error {
		// amqp091-go's own classification: Recover marks the soft
		// (channel-level) reply codes.
		return &amqp.Error{Code: code, Reason: text, Server: true, Recover: code >= 311 && code <= 313 || code >= 403 && code <= 406}
	}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"partial tx completion", soft(406, "PRECONDITION_FAILED - partial tx completion"), true},
		{"channel closed by a misroute", soft(404, "NOT_FOUND - no exchange 'rmqtorture.missing'"), true},
		{"wrapped", fmt.Errorf("commit: %w", soft(406, "x")), true},
		{"graceful broker shutdown", soft(320, "CONNECTION_FORCED - broker forced connection closure"), false},
		{"connection lost (kill)", &amqp.Error{Code: amqp.FrameError, Reason: "EOF"}, false},
		{"channel already closed", amqp.ErrClosed, false},
		{"commit cut short by the confirm timeout", fmt.Errorf("%w: closed", amqpx.ErrNoReply), false},
		{"not an AMQP error", errors.New("io: read/write on closed pipe"), false},
	} {
		if got := commitRefused(tc.err); got != tc.want {
			t.Errorf("%s: refused %v, want %v", tc.name, got, tc.want)
		}
	}
}

// fakeTx is a channel in tx mode: it records publishes, fails the publish
// call number failAt (1-based; 0 never), and answers each tx.commit with the
// next of commits (nil: commit-ok).
type fakeTx struct {
	published []string
	failAt    int
	commits   []error
	committed int
}

func (f *fakeTx) PublishWithContext(_ context.Context, _, _ string, _, _ bool, msg amqp.Publishing) error {
	if len(f.published)+1 == f.failAt {
		return amqp.ErrClosed
	}
	f.published = append(f.published, msg.MessageId)
	return nil
}

func (f *fakeTx) TxCommit() error {
	f.committed++
	if len(f.commits) == 0 {
		return nil
	}
	err := f.commits[0]
	f.commits = f.commits[1:]
	return err
}

// newTestTxn is a transactional epoch of n orders, size per commit, on ch.
func newTestTxn(n, size int, ch txChannel, returns chan amqp.Return) (*txn, *watcher) {
	p := testPublisher(n, scenario.RepublishInDoubt)
	p.p.Mode, p.p.TxSize = scenario.Transactional, size
	return &txn{p: p, ch: ch, r: newConfirmReader(p, testSession, size), returns: returns}, &watcher{p: p}
}

func outcomesOf(p *publisher) []metrics.Outcome {
	var out []metrics.Outcome
	for seq := range p.p.Messages {
		out = append(out, p.p.Ledger.Outcome(seq))
	}
	return out
}

// Three transactions of 2: the first commits (its second message returned
// before the commit-ok), the broker refuses the second, the third's commit
// never returns (connection lost): acked + returned, nacked, in doubt and
// queued again, each counted once.
func TestTxCommitOutcomes(t *testing.T) {
	refused := &amqp.Error{Code: 406, Reason: "PRECONDITION_FAILED - partial tx completion", Server: true, Recover: true}
	ch := &fakeTx{commits: []error{nil, refused, amqp.ErrClosed}}
	returns := make(chan amqp.Return, 2)
	x, w := newTestTxn(6, 2, ch, returns)
	ctx := context.Background()

	if n, err := x.fill(ctx, w, 2); n != 2 || err != nil {
		t.Fatalf("fill: %d %v", n, err)
	}
	returns <- amqp.Return{MessageId: "t-1"} // RabbitMQ routes at commit, returns before commit-ok
	if err := x.commit(w); err != nil {
		t.Fatal(err)
	}
	if n, err := x.fill(ctx, w, 2); n != 2 || err != nil {
		t.Fatalf("fill: %d %v", n, err)
	}
	if err := x.commit(w); !errors.Is(err, traffic.ErrEpochOver) {
		t.Fatalf("refused commit: %v", err)
	}
	if n, err := x.fill(ctx, w, 2); n != 2 || err != nil {
		t.Fatalf("fill: %d %v", n, err)
	}
	if p := x.p; p.tracker.InFlight() != 2 || p.held.Load() != 0 {
		t.Fatalf("in flight %d, held %d before the last commit", p.tracker.InFlight(), p.held.Load())
	}
	if err := x.commit(w); !errors.Is(err, traffic.ErrEpochOver) {
		t.Fatalf("lost commit: %v", err)
	}
	x.r.channelClosed()
	want := []metrics.Outcome{metrics.Acked, metrics.ReturnedAcked, metrics.Nacked, metrics.Nacked, metrics.InDoubt, metrics.InDoubt}
	if got := outcomesOf(x.p); !reflect.DeepEqual(got, want) {
		t.Fatalf("outcomes %v, want %v", got, want)
	}
	if !reflect.DeepEqual(x.p.retry, []int{4, 5}) || x.p.stats.Acked != 2 || x.p.p.Latency.Summary().Count != 4 || len(x.r.slots) != 0 {
		t.Fatalf("retry %v acked %d latencies %d slots %d", x.p.retry, x.p.stats.Acked, x.p.p.Latency.Summary().Count, len(x.r.slots))
	}
	if ch.committed != 3 || len(ch.published) != 6 {
		t.Fatalf("commits %d publishes %v", ch.committed, ch.published)
	}
}

// A publish call that fails mid-transaction leaves that message in doubt
// at once and the ones before it in doubt when the epoch closes; nothing
// is committed.
func TestTxPublishFailsMidTransaction(t *testing.T) {
	ch := &fakeTx{failAt: 3}
	x, w := newTestTxn(4, 4, ch, nil)
	n, err := x.fill(context.Background(), w, 4)
	if n != 2 || !errors.Is(err, traffic.ErrEpochOver) {
		t.Fatalf("fill: %d %v", n, err)
	}
	x.r.channelClosed()
	want := []metrics.Outcome{metrics.InDoubt, metrics.InDoubt, metrics.InDoubt, metrics.NotSent}
	if got := outcomesOf(x.p); !reflect.DeepEqual(got, want) || ch.committed != 0 {
		t.Fatalf("outcomes %v (want %v), commits %d", got, want, ch.committed)
	}
	c, ids, err := x.p.p.Ledger.Reconcile(true)
	if err != nil || c.WentInDoubt != 3 || c.PublishErrors != 1 || !reflect.DeepEqual(ids.WentInDoubt, []metrics.Range{{First: 0, Last: 2}}) {
		t.Fatalf("counts %+v ids %+v err %v", c, ids, err)
	}
}
