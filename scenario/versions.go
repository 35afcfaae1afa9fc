package scenario

// Version-aware expectations and multi-version runs (issue 13).
//
// A scenario's expect can hold, besides what every broker must do, what a
// range of RabbitMQ versions is expected to do differently:
//
//	expect:
//	  modes:
//	    confirm-window: {sent: 100, confirmed: 100, lost: 0}
//	  versions:
//	    - when: {rabbitmq: ">=4.0 <4.3"}
//	      because: rabbitmq-server PR #11937 (4.0 counts nack-requeue toward x-delivery-limit)
//	      modes:
//	        confirm-window: {dead_lettered: 100, deliveries_per_message: 4}
//
// The version is the one the running broker reports (AMQP server-properties),
// never the image's tag.

// VersionScope is an expectation that holds only on the broker versions
// When names. Its per-mode fields are laid over the scenario's unscoped
// expect.modes field by field.
type VersionScope struct {
	When VersionWhen `yaml:"when"`
	// Because cites the source of the behaviour: release notes, an issue
	// or a pull request (required).
	Because string `yaml:"because"`
	// Finding, when set, says how this behaviour differs from RabbitMQ's
	// documentation: the report shows it as a broker finding, not as an
	// rmqtorture failure.
	Finding string                    `yaml:"finding,omitempty"`
	Modes   map[Mode]ModeExpectations `yaml:"modes,omitempty"`
}

// VersionWhen names a range of broker versions.
type VersionWhen struct {
	// RabbitMQ is a version range, e.g. ">=4.0 <4.3" (constraints joined
	// by spaces or commas all hold; "||" separates alternatives).
	RabbitMQ string `yaml:"rabbitmq"`
}

// AppliedVersionScope records, in result.json, which version scope judged
// a run: the broker's reported version and the scope that matched it.
type AppliedVersionScope struct {
	BrokerVersion string `json:"broker_version"`
	// When is the range that matched; empty when the scenario states
	// version scopes but none matches this version (only the unscoped
	// expectations were checked).
	When    string `json:"when,omitempty"`
	Because string `json:"because,omitempty"`
	Finding string `json:"finding,omitempty"`
	// Stated lists the expectations the matched scope set, as
	// "MODE.FIELD" (e.g. "confirm-window.deliveries_per_message"): the
	// values this version is expected to differ in.
	Stated []string `json:"stated,omitempty"`
}
