/*
Copyright The events-apiserver Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package main

import (
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

const metricsImport = "k8s.io/component-base/metrics"

// metricKinds are the component-base constructors and the type each makes.
var metricKinds = map[string]string{
	"NewCounter": "counter", "NewCounterVec": "counter",
	"NewGauge": "gauge", "NewGaugeVec": "gauge",
	"NewHistogram": "histogram", "NewHistogramVec": "histogram",
	"NewSummary": "summary", "NewSummaryVec": "summary",
	"NewTimingHistogram": "timing histogram", "NewTimingHistogramVec": "timing histogram",
}

// metric is one metric a package defines.
type metric struct {
	pkg, name, kind, stability, help, deprecatedVersion string
	labels                                              []string
}

// writeMetrics writes every metric that the module's packages (pkg/ and
// cmd/, not tests or generated code) define, one table per package.
func writeMetrics(b *bytes.Buffer, root string) error {
	found, err := findMetrics(root)
	if err != nil {
		return err
	}
	fmt.Fprintf(b, "# Metrics\n\n")
	fmt.Fprintf(b, "Every metric the events-apiserver's own packages define, as `/metrics` serves them once the\n")
	fmt.Fprintf(b, "part that uses them runs (the mirror's while it mirrors, see `--mirror`; the recorder's in the\n")
	fmt.Fprintf(b, "process that uses `pkg/recorder`, not in the server). The server also exports the metrics of the Kubernetes\n")
	fmt.Fprintf(b, "libraries it is built on, named as in kube-apiserver: `apiserver_*` (requests, admission,\n")
	fmt.Fprintf(b, "storage, watch cache, priority and fairness), `etcd_*`, `workqueue_*`, `authentication_*`,\n")
	fmt.Fprintf(b, "`go_*` and `process_*`; the Kubernetes metrics reference\n")
	fmt.Fprintf(b, "(https://kubernetes.io/docs/reference/instrumentation/metrics/) describes them.\n")
	byPkg := map[string][]metric{}
	var pkgs []string
	for _, m := range found {
		if byPkg[m.pkg] == nil {
			pkgs = append(pkgs, m.pkg)
		}
		byPkg[m.pkg] = append(byPkg[m.pkg], m)
	}
	sort.Strings(pkgs)
	for _, pkg := range pkgs {
		fmt.Fprintf(b, "\n## %s\n\n", pkg)
		fmt.Fprintf(b, "| Name | Type | Labels | Stability | Description |\n|---|---|---|---|---|\n")
		ms := byPkg[pkg]
		sort.Slice(ms, func(i, j int) bool { return ms[i].name < ms[j].name })
		for _, m := range ms {
			labels := make([]string, len(m.labels))
			for i, l := range m.labels {
				labels[i] = "`" + l + "`"
			}
			help := m.help
			if m.deprecatedVersion != "" {
				help = "DEPRECATED in " + m.deprecatedVersion + ". " + help
			}
			fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", m.name, m.kind, strings.Join(labels, ", "), m.stability, cell(help))
		}
	}
	return nil
}

// findMetrics parses the Go files under root's pkg and cmd and returns the
// metrics their component-base constructors define. It fails on a
// constructor whose options it cannot read, and on a metric registered in
// the legacy registry that is not a variable it found, so that no metric is
// left out silently.
func findMetrics(root string) ([]metric, error) {
	var found []metric
	var errs []error
	for _, top := range []string{"pkg", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return nil
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			if rel == filepath.Join("pkg", "generated") {
				return filepath.SkipDir
			}
			ms, err := packageMetrics(path, filepath.ToSlash(rel))
			found = append(found, ms...)
			errs = append(errs, err)
			return nil
		})
		errs = append(errs, err)
	}
	return found, errors.Join(errs...)
}

// packageMetrics reads the metrics of the package in dir.
func packageMetrics(dir, rel string) ([]metric, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	pkgs := map[string][]*ast.File{} // by package name
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") ||
			strings.HasPrefix(name, "zz_generated.") || name == "generated.pb.go" {
			continue
		}
		file, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			return nil, err
		}
		pkgs[file.Name.Name] = append(pkgs[file.Name.Name], file)
	}
	var found []metric
	var errs []error
	for _, files := range pkgs {
		consts := stringConsts(files)
		defined := map[string]bool{}         // variables holding a metric
		registered := map[string]token.Pos{} // identifiers handed to the legacy registry
		for _, file := range files {
			metricsName := importName(file, metricsImport)
			registryName := importName(file, metricsImport+"/legacyregistry")
			ast.Inspect(file, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.ValueSpec:
					for i, value := range n.Values {
						if call, ok := value.(*ast.CallExpr); ok && isCall(call, metricsName, "") && i < len(n.Names) {
							if _, ok := metricKinds[call.Fun.(*ast.SelectorExpr).Sel.Name]; ok {
								defined[n.Names[i].Name] = true
							}
						}
					}
				case *ast.CallExpr:
					if isCall(n, registryName, "MustRegister") || isCall(n, registryName, "Register") {
						for _, arg := range n.Args {
							if id, ok := arg.(*ast.Ident); ok {
								registered[id.Name] = arg.Pos()
							} else {
								errs = append(errs, fmt.Errorf("%s: a metric registered as an expression, not a variable", fset.Position(arg.Pos())))
							}
						}
					}
					if metricsName == "" || !isCall(n, metricsName, "") {
						return true
					}
					kind, ok := metricKinds[n.Fun.(*ast.SelectorExpr).Sel.Name]
					if !ok {
						return true
					}
					m, err := readMetric(n, kind, consts)
					if err != nil {
						errs = append(errs, fmt.Errorf("%s: %w", fset.Position(n.Pos()), err))
						return true
					}
					m.pkg = rel
					found = append(found, m)
				}
				return true
			})
		}
		for name, pos := range registered {
			if !defined[name] {
				errs = append(errs, fmt.Errorf("%s: %s is registered but not defined by a metrics constructor this generator reads", fset.Position(pos), name))
			}
		}
	}
	return found, errors.Join(errs...)
}

// readMetric reads a constructor call: its options literal and, for a
// vector, its label names.
func readMetric(call *ast.CallExpr, kind string, consts map[string]string) (metric, error) {
	m := metric{kind: kind, stability: "ALPHA"} // component-base's default
	if len(call.Args) == 0 {
		return m, errors.New("no options")
	}
	opts, ok := call.Args[0].(*ast.UnaryExpr)
	if !ok {
		return m, errors.New("options are not a &metrics.XOpts{...} literal")
	}
	lit, ok := opts.X.(*ast.CompositeLit)
	if !ok {
		return m, errors.New("options are not a &metrics.XOpts{...} literal")
	}
	var namespace, subsystem, name string
	for _, elt := range lit.Elts {
		kv, ok := elt.(*ast.KeyValueExpr)
		if !ok {
			return m, errors.New("options literal without field names")
		}
		key := kv.Key.(*ast.Ident).Name
		var err error
		switch key {
		case "Namespace":
			namespace, err = stringValue(kv.Value, consts)
		case "Subsystem":
			subsystem, err = stringValue(kv.Value, consts)
		case "Name":
			name, err = stringValue(kv.Value, consts)
		case "Help":
			m.help, err = stringValue(kv.Value, consts)
		case "DeprecatedVersion":
			m.deprecatedVersion, err = stringValue(kv.Value, consts)
		case "StabilityLevel":
			sel, ok := kv.Value.(*ast.SelectorExpr)
			if !ok {
				return m, errors.New("StabilityLevel is not metrics.<LEVEL>")
			}
			m.stability = sel.Sel.Name
		}
		if err != nil {
			return m, fmt.Errorf("%s: %w", key, err)
		}
	}
	var parts []string
	for _, p := range []string{namespace, subsystem, name} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	m.name = strings.Join(parts, "_")
	if m.name == "" {
		return m, errors.New("no name")
	}
	if len(call.Args) > 1 {
		labels, ok := call.Args[1].(*ast.CompositeLit)
		if !ok {
			return m, errors.New("labels are not a []string{...} literal")
		}
		for _, elt := range labels.Elts {
			label, err := stringValue(elt, consts)
			if err != nil {
				return m, fmt.Errorf("label: %w", err)
			}
			m.labels = append(m.labels, label)
		}
	}
	return m, nil
}

// stringConsts returns the package's string constants declared with a
// value of their own (no iota, no types beyond string).
func stringConsts(files []*ast.File) map[string]string {
	consts := map[string]string{}
	// Constants may refer to one another: resolve until nothing changes.
	for changed := true; changed; {
		changed = false
		for _, file := range files {
			for _, decl := range file.Decls {
				gen, ok := decl.(*ast.GenDecl)
				if !ok || gen.Tok != token.CONST {
					continue
				}
				for _, spec := range gen.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if _, done := consts[name.Name]; done || i >= len(vs.Values) {
							continue
						}
						if v, err := stringValue(vs.Values[i], consts); err == nil {
							consts[name.Name] = v
							changed = true
						}
					}
				}
			}
		}
	}
	return consts
}

// stringValue evaluates a constant string expression: literals, their
// concatenation and the package's constants.
func stringValue(expr ast.Expr, consts map[string]string) (string, error) {
	switch e := expr.(type) {
	case *ast.BasicLit:
		if e.Kind == token.STRING {
			return strconv.Unquote(e.Value)
		}
	case *ast.ParenExpr:
		return stringValue(e.X, consts)
	case *ast.BinaryExpr:
		if e.Op == token.ADD {
			x, err := stringValue(e.X, consts)
			if err != nil {
				return "", err
			}
			y, err := stringValue(e.Y, consts)
			return x + y, err
		}
	case *ast.Ident:
		if v, ok := consts[e.Name]; ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("not a constant string this generator can read: %T", expr)
}

// importName is the name file refers to the package path by, "" if it
// does not import it.
func importName(file *ast.File, path string) string {
	for _, imp := range file.Imports {
		if p, _ := strconv.Unquote(imp.Path.Value); p == path {
			if imp.Name != nil {
				return imp.Name.Name
			}
			return path[strings.LastIndex(path, "/")+1:]
		}
	}
	return ""
}

// isCall tells whether call is pkg.fn(...) (pkg.anything when fn is "").
func isCall(call *ast.CallExpr, pkg, fn string) bool {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || pkg == "" {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && x.Name == pkg && (fn == "" || sel.Sel.Name == fn)
}
