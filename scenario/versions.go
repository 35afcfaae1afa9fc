package scenario

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
)

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
//	      because: every delivery counts toward x-delivery-limit, nack with requeue included (measured on 4.0.5)
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

// Ranges are Masterminds/semver/v3 constraints
// (https://github.com/Masterminds/semver#checking-version-constraints). A
// pre-release broker version (4.3.0-rc.1) matches only a range that names
// a pre-release itself, as that library decides. Scopes whose ranges
// overlap are allowed: the first in file order whose range holds the
// version wins, and the later ones are not looked at.

// ForBrokerVersion returns the scenario as it is judged on a broker that
// reports version v ("RabbitMQ 4.3.6", as in Result.BrokerVersion, or
// "4.3.6"): a copy whose expect.modes has the first matching scope's
// per-mode fields laid over the unscoped ones field by field (a field the
// scope sets replaces the unscoped value; the others stay), and what was
// applied, for Result.VersionScope. A scenario without version scopes is
// returned as it is, with nil and no warning. When no scope's range holds
// v, or v is not a version, only the unscoped expectations are checked:
// the applied scope has no range, and the warning says so (with the reason
// when v could not be read). The copy's Expect.Scope is the applied scope,
// so the judge names the version and the source of a scoped expectation it
// finds broken. Matrix cells (ForCell) copy the scope with the rest.
func (s *Scenario) ForBrokerVersion(v string) (Scenario, *AppliedVersionScope, string) {
	cp := *s
	if len(s.Expect.Versions) == 0 {
		return cp, nil, ""
	}
	applied := &AppliedVersionScope{BrokerVersion: v}
	cp.Expect.Scope = applied
	warning := fmt.Sprintf("no expectation in scenario %q is stated for %s: only the unscoped ones were checked", s.Name, brokerName(v))
	sv, err := parseBrokerVersion(v)
	if err != nil {
		return cp, applied, warning + " (" + err.Error() + ")"
	}
	i := s.Expect.scopeFor(sv)
	if i < 0 {
		return cp, applied, warning
	}
	sc := s.Expect.Versions[i]
	applied.When, applied.Because, applied.Finding = sc.When.RabbitMQ, sc.Because, sc.Finding
	cp.Expect.Modes = maps.Clone(s.Expect.Modes)
	if cp.Expect.Modes == nil {
		cp.Expect.Modes = map[Mode]ModeExpectations{}
	}
	for _, m := range Modes {
		over, ok := sc.Modes[m]
		if !ok {
			continue
		}
		merged, stated := overlay(cp.Expect.Modes[m], over)
		cp.Expect.Modes[m] = merged
		for _, f := range stated {
			applied.Stated = append(applied.Stated, string(m)+"."+f)
		}
	}
	return cp, applied, ""
}

// scopeFor is the index of the first version scope whose range holds v,
// -1 when none does (a range that does not parse matches nothing; the
// loader refuses it).
func (e Expect) scopeFor(v *semver.Version) int {
	for i, sc := range e.Versions {
		c, err := semver.NewConstraint(sc.When.RabbitMQ)
		if err == nil && c.Check(v) {
			return i
		}
	}
	return -1
}

// States reports whether the scope states field for mode (Stated holds
// "MODE.FIELD"); false for a nil scope.
func (a *AppliedVersionScope) States(mode Mode, field string) bool {
	return a != nil && slices.Contains(a.Stated, string(mode)+"."+field)
}

// parseBrokerVersion reads a broker's version as it reports it ("RabbitMQ
// 4.3.6": its last word), with the reason when it cannot.
func parseBrokerVersion(v string) (*semver.Version, error) {
	f := strings.Fields(v)
	if len(f) == 0 {
		return nil, errors.New("the broker reported no version")
	}
	sv, err := semver.NewVersion(f[len(f)-1])
	if err != nil {
		return nil, fmt.Errorf("its version %q could not be read: %v", v, err)
	}
	return sv, nil
}

// brokerName names the broker by its reported version for messages:
// "RabbitMQ 4.3.6" (a bare "4.3.6" gets the product's name).
func brokerName(v string) string {
	switch f := strings.Fields(v); len(f) {
	case 0:
		return "this broker"
	case 1:
		return "RabbitMQ " + v
	}
	return v
}

// overlay lays the fields over sets on base, field by field, and returns
// the result with the names (as the scenario file spells them) of the
// fields over set.
func overlay(base, over ModeExpectations) (ModeExpectations, []string) {
	b, o := reflect.ValueOf(&base).Elem(), reflect.ValueOf(over)
	var stated []string
	for i := range o.NumField() {
		if o.Field(i).IsZero() {
			continue
		}
		b.Field(i).Set(o.Field(i))
		name, _, _ := strings.Cut(o.Type().Field(i).Tag.Get("yaml"), ",")
		stated = append(stated, name)
	}
	return base, stated
}

// scoped words a broken expectation msg of mode m's field: when the
// applied version scope stated that field, it names the broker's version,
// the range and the scope's source (because), so a failed verdict says
// which version did what. Other expectations are returned as they are.
func (e Expect) scoped(m Mode, field, msg string) string {
	sc := e.Scope
	if sc == nil || !slices.Contains(sc.Stated, string(m)+"."+field) {
		return msg
	}
	return fmt.Sprintf("%s: %s (expected on RabbitMQ %s: %s)", brokerName(sc.BrokerVersion), msg, sc.When, sc.Because)
}

// validateVersionScopes checks expect.versions: each a range the semver
// library parses, a source, and per-mode expectations under the same rules
// as expect.modes.
func (p *parser) validateVersionScopes(sp string, s *Scenario) {
	ranges := map[string]int{}
	for i, sc := range s.Expect.Versions {
		vp := fmt.Sprintf("%s.expect.versions[%d]", sp, i)
		r := sc.When.RabbitMQ
		key := strings.Join(strings.Fields(r), " ")
		if strings.TrimSpace(r) == "" {
			p.fail(vp+".when.rabbitmq", `needs a range of RabbitMQ versions, e.g. ">=4.0 <4.3"`)
		} else if _, err := semver.NewConstraint(r); err != nil {
			p.fail(vp+".when.rabbitmq", "%q is not a version range: %v", r, err)
		} else if j, dup := ranges[key]; dup {
			// The first scope whose range holds the version applies: this
			// one never would.
			p.fail(vp+".when.rabbitmq", "%q is already expect.versions[%d]'s range, whose scope applies first: put these modes there", r, j)
		} else {
			ranges[key] = i
		}
		if strings.TrimSpace(sc.Because) == "" {
			p.fail(vp+".because", "must cite the source of this behaviour (release notes, an issue or a pull request)")
		}
		if len(sc.Modes) == 0 {
			p.fail(vp+".modes", "states no expectation: name the modes whose counts differ on these versions")
		}
		for _, m := range slices.Sorted(maps.Keys(sc.Modes)) {
			p.validateModeExpectations(vp+".modes."+string(m), m, sc.Modes[m], s)
		}
	}
}

// uncheckedScopedModes removes from each version scope the modes s does
// not run (after --mode narrowed load.modes) and returns one warning per
// mode removed.
func (s *Scenario) uncheckedScopedModes(ran string) []string {
	var out []string
	s.Expect.Versions = slices.Clone(s.Expect.Versions) // the loaded file's scopes stay whole
	for i := range s.Expect.Versions {
		sc := &s.Expect.Versions[i]
		sc.Modes = maps.Clone(sc.Modes)
		for _, m := range Modes {
			if _, ok := sc.Modes[m]; !ok || slices.Contains(s.Load.Modes, m) {
				continue
			}
			out = append(out, fmt.Sprintf("expect.versions[%d].modes.%s of scenario %q is not checked: --mode runs only %s", i, m, s.Name, ran))
			delete(sc.Modes, m)
		}
	}
	// A scope left with no mode states nothing for this run.
	s.Expect.Versions = slices.DeleteFunc(s.Expect.Versions, func(sc VersionScope) bool { return len(sc.Modes) == 0 })
	return out
}
