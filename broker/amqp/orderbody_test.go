package amqp

import (
	"bytes"
	"strconv"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/rmqtorture/rmqtorture/metrics"
	"github.com/rmqtorture/rmqtorture/scenario"
)

// referenceOrderBody is orderBody as it was written with fmt and
// encoding/json: the bytes appendOrderBody must reproduce.
func referenceOrderBody(id string, seq, size int, exact bool) ([]byte, bool) {
	o := Order{OrderID: id, SKU: "SKU-" + leftPad4(seq%997), Quantity: 1 + seq%5, TotalCents: int64(499 + (seq%50)*100)}
	b := marshalOrder(o)
	switch {
	case !exact || size == len(b):
		return b, true
	case size < len(b):
		return b[:size], false
	case size > len(b)+padField:
		o.Padding = string(bytes.Repeat([]byte("x"), size-len(b)-padField))
		return marshalOrder(o), true
	default:
		return append(b, bytes.Repeat([]byte(" "), size-len(b))...), true
	}
}

func leftPad4(n int) string {
	s := strconv.Itoa(n)
	for len(s) < 4 {
		s = "0" + s
	}
	return s
}

// The reflection-free encoder writes exactly encoding/json's bytes for
// every seq shape (SKU 0…996, one to seven digits), every size around the
// bare order (cut, trailing whitespace, padded) and ids that need escaping;
// in a reused buffer as in a fresh one.
func TestAppendOrderBodyMatchesMarshal(t *testing.T) {
	seqs := []int{0, 1, 9, 10, 99, 100, 996, 997, 999, 1000, 1001, 4999, 12345, 999999, 9999999}
	for s := range 2000 {
		seqs = append(seqs, s*37)
	}
	ids := []string{"t-", "run-7f3a-", "a<b>&\"\\\u00e9\u2028-"}
	var buf []byte
	for _, prefix := range ids {
		for i, seq := range seqs {
			id := prefix + strconv.Itoa(seq)
			bare, _ := referenceOrderBody(id, seq, 0, false)
			sizes := []int{0, 1, 4096}
			if i < 20 {
				sizes = append(sizes, 200000)
			}
			for d := -3; d <= padField+3; d++ {
				sizes = append(sizes, len(bare)+d)
			}
			for _, size := range sizes {
				if size < 0 {
					continue
				}
				for _, exact := range []bool{true, false} {
					want, wantJSON := referenceOrderBody(id, seq, size, exact)
					got, gotJSON := OrderBody(id, seq, size, exact)
					if !bytes.Equal(got, want) || gotJSON != wantJSON {
						t.Fatalf("id %q seq %d size %d exact %v:\n got %q (json %v)\nwant %q (json %v)", id, seq, size, exact, got, gotJSON, want, wantJSON)
					}
					buf, gotJSON = appendOrderBody(buf[:0], id, seq, size, exact)
					if !bytes.Equal(buf, want) || gotJSON != wantJSON {
						t.Fatalf("reused buffer, id %q seq %d size %d exact %v: %q", id, seq, size, exact, buf)
					}
				}
			}
		}
	}
}

// AppendMessageID writes MessageID's bytes.
func TestAppendMessageID(t *testing.T) {
	l := metrics.NewLedger("run-", 10)
	for _, seq := range []int{0, 7, 123456} {
		if got := string(l.AppendMessageID([]byte("x"), seq)); got != "x"+l.MessageID(seq) {
			t.Errorf("AppendMessageID(%d) = %q", seq, got)
		}
	}
}

// BenchmarkPublishing builds one confirm-mode message per op as a publish
// loop does (ns/op, B/op, allocs/op), for the default ~90-byte order and a
// 4 KiB exact-size one; BenchmarkOrderBodyMarshal is the encoding/json
// body it replaced, for comparison.
func BenchmarkPublishing(b *testing.B) {
	for _, size := range []int{0, 4096} {
		b.Run("size="+strconv.Itoa(size), func(b *testing.B) {
			p := testPublisher(1<<20, scenario.RepublishNone)
			p.p.MessageSizeBytes = size
			var mb messageBuilder
			b.ReportAllocs()
			n := 0
			for i := 0; b.Loop(); i++ {
				m := p.publishing(&mb, i&(1<<20-1), 1)
				n += len(m.Body)
			}
			if n == 0 {
				b.Fatal("no body")
			}
		})
	}
}

func BenchmarkOrderBodyMarshal(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		referenceOrderBody("t-"+strconv.Itoa(i), i, 0, false)
	}
}

// A delivery without the attempt header is attempt 1: the publisher sends
// the header on republishes only.
func TestDeliveryAttempt(t *testing.T) {
	for _, c := range []struct {
		h    amqp.Table
		want int
	}{{nil, 1}, {amqp.Table{}, 1}, {amqp.Table{SentAtHeader: int64(5)}, 1}, {amqp.Table{AttemptHeader: int32(2)}, 2}, {amqp.Table{AttemptHeader: int64(7)}, 7}} {
		if got := deliveryAttempt(c.h); got != c.want {
			t.Errorf("deliveryAttempt(%v) = %d, want %d", c.h, got, c.want)
		}
	}
}
