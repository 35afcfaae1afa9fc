package metrics

// PartitionClasses are the JSON names of the Counts fields that partition
// the sent ids: each sent id ends in exactly one of them, and ClassSum adds
// them up (a test holds the two together).
var PartitionClasses = []string{
	"confirmed", "lost", "lost_dead_letter_path", "unverified", "nacked", "returned",
	"in_doubt", "unconfirmed_delivered", "unconfirmed_missing", "resurrected",
}

// CrossClasses are the JSON names of the classes counted beside the
// partition: copies of an id delivered more than once (duplicates),
// deliveries of ids this burst never published (unexpected), orders whose
// deadline passed before they left the process (not_published), and ids
// found in the dead-letter queue (dead_lettered).
var CrossClasses = []string{"duplicates", "unexpected", "not_published", "dead_lettered"}
