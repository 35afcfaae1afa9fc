package scenario

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// The docs tests keep README.md and docs/ true to the code: every key a
// scenario file may hold is in the scenario file reference, every fault
// action has its own section (checked with the rest of its pieces, in
// TestEveryFaultActionHasItsPieces), every relative link and anchor resolves, and
// every page opens with a table of contents of its own sections. They need
// no Docker, so they run in every tier (scripts/test.sh -short and the gate).

// docPages is README.md and every page of docs/, by path from the package.
func docPages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob("../docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no pages in docs/: %v", err)
	}
	return append([]string{"../README.md"}, pages...)
}

func readDoc(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// schemaKeys is every key of every "properties" object in the schema,
// walked recursively, with the keys of a fault step ($defs.fault) apart.
func schemaKeys(t *testing.T) (all, fault map[string]bool) {
	t.Helper()
	var schema map[string]any
	if err := json.Unmarshal([]byte(readDoc(t, "scenarios.schema.json")), &schema); err != nil {
		t.Fatal(err)
	}
	all, fault = map[string]bool{}, map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if props, ok := v["properties"].(map[string]any); ok {
				for k := range props {
					all[k] = true
				}
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(schema)
	defs, _ := schema["$defs"].(map[string]any)
	step, _ := defs["fault"].(map[string]any)
	props, _ := step["properties"].(map[string]any)
	for k := range props {
		fault[k] = true
	}
	if len(all) < 50 || len(fault) < 10 {
		t.Fatalf("the schema walk found %d keys, %d of a fault step: the schema's layout changed", len(all), len(fault))
	}
	return all, fault
}

// mentions reports whether text names key as a whole word (keys hold
// letters, digits, "_" and "-").
func mentions(text, key string) bool {
	return regexp.MustCompile(`(^|[^A-Za-z0-9_-])` + regexp.QuoteMeta(key) + `($|[^A-Za-z0-9_-])`).MatchString(text)
}

// TestDocsNameEverySchemaKey: every key the scenario schema knows is in the
// scenario file reference; a fault step's keys may be in the fault actions
// page instead.
func TestDocsNameEverySchemaKey(t *testing.T) {
	ref := readDoc(t, "../docs/scenario-file.md")
	faults := readDoc(t, "../docs/faults.md")
	all, fault := schemaKeys(t)
	for _, k := range slices.Sorted(maps.Keys(all)) {
		if mentions(ref, k) || (fault[k] && mentions(faults, k)) {
			continue
		}
		if fault[k] {
			t.Errorf("the schema's fault step key %q is in neither docs/scenario-file.md nor docs/faults.md", k)
		} else {
			t.Errorf("the schema's key %q is not in docs/scenario-file.md", k)
		}
	}
}

// faultHeadings is the level-3 headings of docs/faults.md, one per fault
// action (TestEveryFaultActionHasItsPieces checks them).
func faultHeadings(t *testing.T) map[string]bool {
	t.Helper()
	heads := map[string]bool{}
	for _, h := range mdHeadings(readDoc(t, "../docs/faults.md")) {
		if h.level == 3 {
			heads[strings.Trim(h.text, "`")] = true
		}
	}
	return heads
}

type mdHeading struct {
	level int
	text  string
}

// fenceRe opens or closes a fenced code block (``` or longer, or ~~~).
var fenceRe = regexp.MustCompile("^ {0,3}(`{3,}|~{3,})")

// mdProse is the text outside fenced code blocks, line by line; fenced
// lines are blank, so line numbers hold.
func mdProse(text string) []string {
	lines := strings.Split(text, "\n")
	out := make([]string, len(lines))
	fence := ""
	for i, l := range lines {
		m := fenceRe.FindStringSubmatch(l)
		switch {
		case fence == "" && m != nil:
			fence = m[1]
		case fence != "":
			if m != nil && m[1][0] == fence[0] && len(m[1]) >= len(fence) && strings.TrimSpace(l[len(m[0]):]) == "" {
				fence = ""
			}
		default:
			out[i] = l
		}
	}
	return out
}

var headingRe = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)

func mdHeadings(text string) []mdHeading {
	var hs []mdHeading
	for _, l := range mdProse(text) {
		if m := headingRe.FindStringSubmatch(l); m != nil {
			hs = append(hs, mdHeading{len(m[1]), m[2]})
		}
	}
	return hs
}

var inlineLinkRe = regexp.MustCompile(`\[([^\[\]]*)\]\(([^()\s]*)\)`)

// slug is GitHub's anchor for a heading: its text lower-cased, links
// reduced to their text, every character but letters, digits, "_", "-"
// and spaces dropped, spaces turned into "-".
func slug(heading string) string {
	heading = inlineLinkRe.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), unicode.IsMark(r), r == '_', r == '-':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// anchors is every anchor of a page's headings, in order, the second of
// a slug numbered "-1" as GitHub does.
func anchors(text string, maxLevel int) []string {
	seen := map[string]int{}
	var out []string
	for _, h := range mdHeadings(text) {
		s := slug(h.text)
		n := seen[s]
		seen[s]++
		if n > 0 {
			s += "-" + strconv.Itoa(n)
		}
		if h.level <= maxLevel {
			out = append(out, s)
		}
	}
	return out
}

// dropCodeSpans blanks inline code spans (text between runs of backticks),
// where brackets are not links.
func dropCodeSpans(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '`' {
			b.WriteByte(s[i])
			i++
			continue
		}
		n := 0
		for i+n < len(s) && s[i+n] == '`' {
			n++
		}
		ticks := s[i : i+n]
		end := -1
		for j := i + n; j < len(s); {
			k := strings.Index(s[j:], ticks)
			if k < 0 {
				break
			}
			k += j
			if k+n < len(s) && s[k+n] == '`' { // a longer run: not the closer
				j = k + n
				for j < len(s) && s[j] == '`' {
					j++
				}
				continue
			}
			end = k
			break
		}
		if end < 0 {
			b.WriteString(ticks)
			i += n
			continue
		}
		b.WriteString(strings.Repeat(" ", end+n-i))
		i = end + n
	}
	return b.String()
}

// TestDocsLinksResolve: every relative link in README.md and docs/ names a
// file that exists, and its #anchor a heading of that page; README.md links
// every page of docs/.
func TestDocsLinksResolve(t *testing.T) {
	linked := map[string]bool{}
	for _, page := range docPages(t) {
		prose := dropCodeSpans(strings.Join(mdProse(readDoc(t, page)), "\n"))
		for _, m := range inlineLinkRe.FindAllStringSubmatch(prose, -1) {
			target := m[2]
			if target == "" || regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`).MatchString(target) {
				continue // a URL: not ours to check
			}
			file, anchor, _ := strings.Cut(target, "#")
			dest := page
			if file != "" {
				dest = filepath.Join(filepath.Dir(page), file)
				if page == "../README.md" {
					linked[dest] = true
				}
				if _, err := os.Stat(dest); err != nil {
					t.Errorf("%s: the link [%s](%s) names %s, which does not exist", page[3:], m[1], target, file)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			if !strings.HasSuffix(dest, ".md") || !slices.Contains(anchors(readDoc(t, dest), 6), anchor) {
				t.Errorf("%s: the link [%s](%s) names #%s, which is no heading of %s", page[3:], m[1], target, anchor, filepath.Base(dest))
			}
		}
	}
	for _, page := range docPages(t)[1:] {
		if !linked[filepath.Clean(page)] {
			t.Errorf("README.md does not link %s: add it to its Documentation list", page[3:])
		}
	}
}

// TestDocsOpenWithContents: every page of docs/ starts, after its title,
// with a bullet list that links each of its ## and ### headings, in order.
func TestDocsOpenWithContents(t *testing.T) {
	pages, _ := filepath.Glob("../docs/*.md")
	entry := regexp.MustCompile(`^ *- \[[^\]]*\]\(#([^)]*)\)$`)
	for _, page := range pages {
		lines := strings.Split(readDoc(t, page), "\n")
		if !strings.HasPrefix(lines[0], "# ") {
			t.Errorf("%s: does not open with a # title", page[3:])
			continue
		}
		var listed []string
		i := 1
		for i < len(lines) && lines[i] == "" {
			i++
		}
		for ; i < len(lines) && lines[i] != ""; i++ {
			m := entry.FindStringSubmatch(lines[i])
			if m == nil {
				t.Errorf("%s:%d: the table of contents holds %q, not a link to a heading", page[3:], i+1, lines[i])
				break
			}
			listed = append(listed, m[1])
		}
		if want := anchors(readDoc(t, page), 3)[1:]; !slices.Equal(listed, want) {
			t.Errorf("%s: the table of contents links %v, want its ## and ### headings %v", page[3:], listed, want)
		}
	}
}
