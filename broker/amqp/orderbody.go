package amqp

import (
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
)

// appendOrderJSON appends the JSON encoding/json gives Order{OrderID: id,
// SKU, Quantity, TotalCents} of order seq, with padding bytes of Padding
// ("x"…; none: the field is omitted), byte for byte, without reflection
// (TestAppendOrderJSONMatchesMarshal). id must need no JSON escaping
// (plainJSON).
func appendOrderJSON(b []byte, id string, seq, padding int) []byte {
	b = append(b, `{"order_id":"`...)
	b = append(b, id...)
	b = append(b, `","sku":"SKU-`...)
	sku := seq % 997
	for d := 1000; d > 1 && sku < d; d /= 10 {
		b = append(b, '0') // fmt's %04d
	}
	b = strconv.AppendInt(b, int64(sku), 10)
	b = append(b, `","quantity":`...)
	b = strconv.AppendInt(b, int64(1+seq%5), 10)
	b = append(b, `,"total_cents":`...)
	b = strconv.AppendInt(b, int64(499+(seq%50)*100), 10)
	if padding > 0 {
		b = append(b, `,"padding":"`...)
		b = appendRepeat(b, 'x', padding)
		b = append(b, '"')
	}
	return append(b, '}')
}

// orderSKU is order seq's SKU, as appendOrderJSON writes it.
func orderSKU(seq int) string { return "SKU-" + strconv.Itoa(10000 + seq%997)[1:] }

// appendRepeat appends n copies of c.
func appendRepeat(b []byte, c byte, n int) []byte {
	if n <= 0 {
		return b
	}
	b = append(b, make([]byte, n)...) // no allocation: the compiler extends b
	fill := b[len(b)-n:]
	fill[0] = c
	for done := 1; done < n; done *= 2 {
		copy(fill[done:], fill[:done])
	}
	return b
}

// plainJSON reports whether encoding/json writes s as is between quotes:
// printable ASCII other than '"', '\\' and the HTML-escaped '<', '>', '&'.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// appendOrderBody appends orderBody's body of order seq to b: the order's
// JSON, then cut, padded or filled to size when exact. The JSON is
// appendOrderJSON's; an id that needs escaping (never one a Ledger makes
// from its queue-name prefix, which a user may choose) goes through
// encoding/json instead.
func appendOrderBody(b []byte, id string, seq, size int, exact bool) (body []byte, isJSON bool) {
	order := func(b []byte, padding int) []byte { return appendOrderJSON(b, id, seq, padding) }
	if !plainJSON(id) {
		order = func(b []byte, padding int) []byte {
			o := Order{OrderID: id, SKU: orderSKU(seq), Quantity: 1 + seq%5, TotalCents: int64(499 + (seq%50)*100)}
			if padding > 0 {
				o.Padding = string(appendRepeat(nil, 'x', padding))
			}
			return append(b, marshalOrder(o)...)
		}
	}
	start := len(b)
	b = order(b, 0)
	n := len(b) - start
	switch {
	case !exact || size == n:
		return b, true
	case size < n:
		return b[:start+size], false
	case size > n+padField:
		return order(b[:start], size-n-padField), true
	default:
		return appendRepeat(b, ' ', size-n), true
	}
}

// messageBuilder builds one channel's messages in buffers it reuses: the
// id's bytes, the body and the header table (per message, one allocation
// for the id string, plus the boxed sent-time header when stamped). A
// Publishing it returns is valid until its next call: amqp091-go v1.16.0 serialises every frame of a publish before
// Publish returns (Channel.PublishWithDeferredConfirm → Channel.sendOpen →
// Connection.sendUnflushed → writer.WriteFrameNoFlush, which copies the
// header table and body into the connection's bufio.Writer or writes them
// to the socket; channel.go, connection.go, write.go) and keeps no
// reference to the Publishing. One builder per publish loop: not safe for
// concurrent use.
type messageBuilder struct {
	id, body []byte
	headers  amqp.Table
}

// build returns order seq's message as publisher p sends it at now (its
// timestamp property and sent-time header); attempt is the publish attempt
// Ledger.Published returned (confirm and transactional modes), carried in
// AttemptHeader on republishes (attempt > 1) only; 0 in fire-and-forget.
func (m *messageBuilder) build(p *publisher, seq, attempt int, now time.Time) amqp.Publishing {
	m.id = p.p.Ledger.AppendMessageID(m.id[:0], seq)
	// A string of its own (one small allocation): the message id may be
	// kept by whatever reads the Publishing, now or in a later change.
	id := string(m.id)
	body, isJSON := appendOrderBody(m.body[:0], id, seq, p.p.MessageSizeBytes, p.p.MessageSizeSet || p.p.MessageSizeBytes > 0)
	m.body = body
	contentType := "application/json"
	if !isJSON {
		contentType = "application/octet-stream" // a cut order is no longer JSON
	}
	msg := amqp.Publishing{
		ContentType:  contentType,
		DeliveryMode: p.deliveryMode,
		MessageId:    id,
		Timestamp:    now,
		Body:         body,
	}
	if p.p.StampSentTime || attempt > 1 {
		if m.headers == nil {
			m.headers = amqp.Table{}
		}
		clear(m.headers)
		if p.p.StampSentTime {
			// The timestamp property has 1 s resolution on the wire.
			m.headers[SentAtHeader] = now.UnixNano()
		}
		if attempt > 1 {
			// A copy the broker requeues comes back flagged redelivered,
			// and only the attempt tells a redelivery of a seen copy from a
			// first delivery of a republished one. A copy without it is
			// attempt 1 (deliveryAttempt).
			m.headers[AttemptHeader] = int32(attempt)
		}
		msg.Headers = m.headers
	}
	return msg
}

// deliveryAttempt is the publish attempt a delivered copy came from:
// AttemptHeader, or 1 when absent, since the publisher sends the header
// on republishes only (a fire-and-forget id, never republished once
// sent, has attempt 1 too).
func deliveryAttempt(h amqp.Table) int {
	if n := headerInt(h, AttemptHeader); n > 0 {
		return n
	}
	return 1
}
