package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/rmqtorture/rmqtorture"

// layering lists, for each package of the module (its path below the
// module), the packages of the module its production code may import: the
// layering of docs/architecture.md (after shared/DESIGN.md). Imports run
// only downward; a package missing here fails the test until it is placed.
var layering = map[string][]string{
	"":                           {"cmd"},
	"cmd":                        {"broker", "broker/amqp", "broker/docker", "broker/stream", "engine", "explore", "inputfile", "metrics", "redact", "reports", "scenario", "verdict"},
	"explore":                    {"scenario"},
	"broker":                     {"broker/internal/amqpx", "redact", "scenario"},
	"broker/docker":              {"broker/internal/amqpx", "broker/lazyfs", "engine", "redact", "scenario"},
	"broker/amqp":                {"broker/internal/amqpx", "broker/internal/traffic", "engine", "metrics", "scenario"},
	"broker/stream":              {"broker/amqp", "broker/internal/traffic", "engine", "metrics"},
	"broker/internal/amqpx":      {},
	"broker/lazyfs":              {},
	"broker/internal/traffic":    {"engine", "metrics"},
	"broker/internal/brokertest": {"scenario"},
	"engine":                     {"metrics", "redact", "scenario", "verdict"},
	"verdict":                    {"metrics", "scenario"},
	"reports":                    {"metrics", "redact", "scenario"},
	"scenario":                   {"inputfile", "metrics", "redact"},
	"metrics":                    {},
	"redact":                     {},
	"inputfile":                  {},
	"internal/schemagen":         {"scenario"},
}

// clients are the protocol and engine clients only broker/ may import.
var clients = []string{"github.com/docker/", "github.com/rabbitmq/amqp091-go", "github.com/rabbitmq/rabbitmq-stream-go-client"}

// TestLayering holds the production code's imports to the layering: each
// package imports only the module's packages listed for it, only broker/
// imports the Docker, AMQP and stream clients, and only the verdict
// package reconciles a ledger or calls the judge (run, check and the
// merge of split runs share its Conclude).
func TestLayering(t *testing.T) {
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && path != "." || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		if pkg == "." {
			pkg = ""
		}
		allowed, placed := layering[pkg]
		if !placed {
			t.Errorf("%s: package %q has no place in the layering (layering_test.go, docs/architecture.md)", path, pkg)
			return nil
		}
		checkImports(t, path, pkg, f, allowed)
		if pkg != "verdict" {
			checkNoVerdictCalls(t, fset, path, f)
		}
		if pkg == "cmd" {
			checkCmdMetrics(t, fset, path, f)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func checkImports(t *testing.T, path, pkg string, f *ast.File, allowed []string) {
	t.Helper()
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if own, ok := strings.CutPrefix(p, module+"/"); ok {
			if !slices.Contains(allowed, own) {
				t.Errorf("%s imports %s: %q may import only %v", path, own, pkg, allowed)
			}
			continue
		}
		for _, c := range clients {
			if strings.HasPrefix(p, c) && pkg != "broker" && !strings.HasPrefix(pkg, "broker/") {
				t.Errorf("%s imports %s: only broker/ talks to the Docker Engine, AMQP and streams", path, p)
			}
		}
	}
}

// cmdMetrics is what cmd may use of metrics: the vocabulary a run's
// observers and split runs share (events, the burst's series and
// timeline, broker states, load parts, the bucket default). The ledger
// and the history codec are verdict's: cmd hands verdict the files.
var cmdMetrics = []string{"BrokerState", "DefaultBucket", "Event", "EventKind", "MaxParts", "ParsePart", "Part", "PartRange", "Series", "Timeline"}

func checkCmdMetrics(t *testing.T, fset *token.FileSet, path string, f *ast.File) {
	t.Helper()
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok && x.Name == "metrics" {
			name := sel.Sel.Name
			if !slices.Contains(cmdMetrics, name) && !strings.HasPrefix(name, "Ev") && !strings.HasPrefix(name, "State") {
				t.Errorf("%s: cmd uses metrics.%s: cmd may use only metrics' shared vocabulary %v (Ev…, State…); the ledger and the history codec are verdict's", fset.Position(sel.Pos()), name, cmdMetrics)
			}
		}
		return true
	})
}

func checkNoVerdictCalls(t *testing.T, fset *token.FileSet, path string, f *ast.File) {
	t.Helper()
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Reconcile" || sel.Sel.Name == "Judge") {
			t.Errorf("%s: %s calls %s: only verdict.Conclude reconciles a ledger and judges", fset.Position(call.Pos()), path, sel.Sel.Name)
		}
		return true
	})
}
