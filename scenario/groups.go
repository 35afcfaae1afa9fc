package scenario

import (
	"fmt"
	"strings"
)

// Group entries and broker.images (issue 13): an entry with runs names
// other scenarios of its file and runs them, on its broker.images if set,
// into one versions report; broker.images runs one scenario on several
// images.

// IsGroup reports whether s is a group entry (it has runs).
func (s *Scenario) IsGroup() bool { return len(s.Runs) > 0 }

// groupOwnKeys are the scenario keys a group may not have: each scenario it
// runs brings its own.
var groupOwnKeys = []string{"queue", "load", "faults", "consumers", "drain", "expect", "matrix", "seed"}

// groupBrokerKeys are the broker keys a group may not have: only
// broker.images, which its scenarios run on.
var groupBrokerKeys = []string{"image", "ready_timeout", "config", "advanced_config", "nodes"}

// validateGroup checks the group entry at index i of f: its runs name
// scenarios of the file that are not groups, each once; it has no settings
// of its own beyond description and broker.images.
func (p *parser) validateGroup(sp string, f *File, i int) {
	g := &f.Scenarios[i]
	if len(g.Runs) == 0 {
		p.fail(sp+".runs", "names no scenario: list the scenarios of this file the group runs, e.g. runs: [kill-mid-burst, delivery-limit]")
	}
	var names []string
	for _, s := range f.Scenarios {
		names = append(names, s.Name)
	}
	seen := map[string]int{}
	for j, name := range g.Runs {
		rp := fmt.Sprintf("%s.runs[%d]", sp, j)
		if k, dup := seen[name]; dup {
			p.fail(rp, "%q is already runs[%d]: a group runs each scenario once", name, k)
			continue
		}
		seen[name] = j
		target, err := f.Find("", name)
		switch {
		case name == g.Name:
			p.fail(rp, "%q is this group itself", name)
		case err != nil:
			p.fail(rp, "no scenario named %q in this file%s", name, DidYouMean(name, names))
		case target.IsGroup():
			p.fail(rp, "%q is a group itself: a group runs scenarios, not groups", name)
		}
	}
	for _, key := range groupOwnKeys {
		if p.has(sp + "." + key) {
			p.fail(sp+"."+key, "a group (runs) has no %s of its own: each scenario it runs brings its own", key)
		}
	}
	for _, key := range groupBrokerKeys {
		if p.has(sp + ".broker." + key) {
			p.fail(sp+".broker."+key, "a group (runs) sets only broker.images: each scenario it runs brings its own broker.%s", key)
		}
	}
	p.validateImages(sp, g)
}

// validateImages checks broker.images: no empty name, none twice, and not
// beside broker.image.
func (p *parser) validateImages(sp string, s *Scenario) {
	if p.has(sp+".broker.images") && len(s.Broker.Images) == 0 {
		p.fail(sp+".broker.images", "names no image: list two or more images to run the scenario on, or leave broker.images out")
		return
	}
	if len(s.Broker.Images) > 0 && p.has(sp+".broker.image") && !s.IsGroup() {
		p.fail(sp+".broker.images", "broker.image and broker.images both name the broker's image: give one (broker.images runs the scenario on each)")
	}
	seen := map[string]int{}
	for j, img := range s.Broker.Images {
		ip := fmt.Sprintf("%s.broker.images[%d]", sp, j)
		if strings.TrimSpace(img) == "" {
			p.fail(ip, "must name an image")
			continue
		}
		ref, err := ImageRef(img)
		if err != nil {
			p.fail(ip, "%v", err)
			continue
		}
		if k, dup := seen[ref]; dup {
			p.fail(ip, "%q is already broker.images[%d] (%q): each image runs once", img, k, s.Broker.Images[k])
			continue
		}
		seen[ref] = j
	}
}
