package stream

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	streamamqp "github.com/rabbitmq/rabbitmq-stream-go-client/pkg/amqp"
	"github.com/rabbitmq/rabbitmq-stream-go-client/pkg/stream"

	"github.com/rmqtorture/rmqtorture/broker/amqp"
	"github.com/rmqtorture/rmqtorture/broker/internal/traffic"
	"github.com/rmqtorture/rmqtorture/engine"
)

// Drain reads the stream from its first offset and records every message's
// id (and publish attempt) in the ledger, as the AMQP drain records each
// delivery: a stream is never emptied, so it is read once, to its end. The
// end is the stream's last committed chunk when the drain starts (the burst
// is over; nothing is appended any more): the drain stops once it has read
// that chunk and nothing arrived for d.Idle. What it did not find then is
// not in the stream, so there is no waiting for confirmed ids as an AMQP
// queue needs. A consumer that fails (the stream without a leader right
// after a restart), closes, or reads nothing for d.LostWait before the end
// is opened again from the offset after the last one read, until ctx's
// deadline, which is returned as an error: the drain is then incomplete.
func (s *Traffic) Drain(ctx context.Context, d engine.DrainPlan) error {
	st := &streamDrain{d: d}
	return traffic.RetryDrain(ctx, "stream "+strconv.Quote(d.Queue), func() (bool, error) { return s.drainOnce(ctx, st) }, noPort, func(err error) {
		s.Log.Debug("stream drain retry", "stream", d.Queue, "err", err)
	})
}

// noPort: no retry brings a stream port.
func noPort(err error) bool { return errors.Is(err, errNoStreamPort) }

// streamDrain is what the drain has read so far, across consumers.
type streamDrain struct {
	d        engine.DrainPlan
	mu       sync.Mutex
	gen      int   // the consumer whose messages count; older ones' are ignored
	next     int64 // offset after the last message read
	lastSeen time.Time
}

// open starts a new consumer generation and returns it with the offset to
// read from.
func (st *streamDrain) open() (gen int, from stream.OffsetSpecification) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.gen++
	st.lastSeen = time.Now()
	if st.next == 0 {
		return st.gen, stream.OffsetSpecification{}.First()
	}
	return st.gen, stream.OffsetSpecification{}.Offset(st.next)
}

// record counts one message read at offset by consumer generation gen: a
// stream delivers whole chunks, so a consumer opened mid-chunk sees
// offsets already read, and those count once.
func (st *streamDrain) record(gen int, offset int64, m *streamamqp.Message) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if gen != st.gen || offset < st.next {
		return
	}
	st.next = offset + 1
	st.lastSeen = time.Now()
	id, attempt := streamMessageID(m)
	if st.d.DeadLetter {
		st.d.Ledger.DeadLettered(id)
	} else {
		st.d.Ledger.DeliveredAttempt(id, false, attempt)
	}
}

// progress returns how long nothing was read and the offset after the
// last message read.
func (st *streamDrain) progress() (idle time.Duration, next int64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return time.Since(st.lastSeen), st.next
}

// stop makes every consumer's later messages count for nothing.
func (st *streamDrain) stop() {
	st.mu.Lock()
	st.gen++
	st.mu.Unlock()
}

// streamMessageID returns a stream message's id (its AMQP 1.0 message-id)
// and publish attempt (0 when it carries none).
func streamMessageID(m *streamamqp.Message) (id string, attempt int) {
	if m == nil || m.Properties == nil || m.Properties.MessageID == nil {
		return "", 0
	}
	switch v := m.Properties.MessageID.(type) {
	case string:
		id = v
	default:
		id = fmt.Sprint(v)
	}
	switch v := m.ApplicationProperties[amqp.AttemptHeader].(type) {
	case int32:
		attempt = int(v)
	case int64:
		attempt = int(v)
	case int:
		attempt = v
	}
	return id, attempt
}

// drainOnce reads on one consumer from where the last one stopped. It
// returns true when the drain is complete (or the stream is gone), false
// and the error otherwise, for Drain to retry.
func (s *Traffic) drainOnce(ctx context.Context, st *streamDrain) (bool, error) {
	env, err := s.environment()
	if err != nil {
		return false, err
	}
	defer closeEnv(env)
	last, err := s.lastChunk(env, st.d.Queue)
	if errors.Is(err, stream.StreamDoesNotExist) {
		s.Log.Info("stream gone after the fault: nothing to drain", "stream", st.d.Queue)
		return true, nil
	}
	if err != nil {
		return false, err
	}
	gen, from := st.open()
	defer st.stop()
	c, err := env.NewConsumer(st.d.Queue, func(cc stream.ConsumerContext, m *streamamqp.Message) {
		st.record(gen, cc.Consumer.GetOffset(), m)
	}, stream.NewConsumerOptions().SetOffset(from).SetClientProvidedName("rmqtorture-drain"))
	if err != nil {
		return false, err
	}
	closed := c.NotifyClose()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case ev := <-closed:
			return false, fmt.Errorf("drain consumer closed: %s", ev.Reason)
		case <-tick.C:
			idle, next := st.progress()
			switch {
			case idle < st.d.Idle:
			case next > last: // the last chunk is read, and dispatched whole
				return true, nil
			case idle >= st.d.LostWait:
				return false, fmt.Errorf("nothing read for %s at offset %d, before the stream's last chunk (offset %d)", idle.Round(time.Millisecond), next, last)
			}
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// lastChunk returns the offset of the first message of the stream's last
// committed chunk, -1 when the stream holds nothing. A node answers from
// its own member, and a replica that has not heard from the writer since
// a restart knows of no committed chunk: on a cluster every node is asked
// and the highest answer counts (the writer's), so a drain that meets such
// a replica first does not take the stream for empty (measured: 0 of
// 4,000 read after every node of a stream lost power and came back).
func (s *Traffic) lastChunk(env *stream.Environment, name string) (int64, error) {
	if s.Addrs == nil {
		return committedChunk(env, name)
	}
	last, answered := int64(-1), 0
	var errs []error
	for _, a := range s.Addrs() {
		e, err := s.environmentOn([]string{a})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c, err := committedChunk(e, name)
		closeEnv(e)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		answered++
		last = max(last, c)
	}
	if answered == 0 {
		return 0, errors.Join(errs...)
	}
	return last, nil
}

// committedChunk is the committed chunk id the node env's locator is on
// reports for the stream, -1 when it knows of none.
func committedChunk(env *stream.Environment, name string) (int64, error) {
	stats, err := env.StreamStats(name)
	if err != nil {
		return 0, err
	}
	last, err := stats.CommittedChunkId()
	if err != nil {
		return -1, nil // no committed chunk: an empty stream
	}
	return last, nil
}
