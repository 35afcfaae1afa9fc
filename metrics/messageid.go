package metrics

import (
	"strconv"
	"strings"
)

// AppendMessageID appends MessageID(seq) to b: a publisher building its
// messages in a reused buffer allocates no string per message.
func (l *Ledger) AppendMessageID(b []byte, seq int) []byte {
	return strconv.AppendInt(append(b, l.prefix...), int64(seq), 10)
}

// ProbePrefix starts the message id of a probe: one message rmqtorture
// publishes through each node of a cluster after a partition heals, to
// see a publisher confirm go through every node (ProbeID). The ledger
// counts no probe, as it is no order.
const ProbePrefix = "rmqt-probe-"

// ProbeID is the message id of the probe sent through node (1-based) at
// the k-th heal of a burst.
func ProbeID(k, node int) string {
	return ProbePrefix + strconv.Itoa(k) + "-" + strconv.Itoa(node)
}

// IsProbeID reports whether id is a probe's (ProbeID).
func IsProbeID(id string) bool { return strings.HasPrefix(id, ProbePrefix) }
