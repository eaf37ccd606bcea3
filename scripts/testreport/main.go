package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("testreport", flag.ContinueOnError)
	fs.SetOutput(stderr)
	state := fs.String("state", "", "file to append package results and counts to (filter mode)")
	summarize := fs.String("summarize", "", "state file to print the summary of (summary mode)")
	if err := fs.Parse(args); err != nil {
		return 64
	}
	switch {
	case *summarize != "" && *state == "" && fs.NArg() == 0:
		return summary(*summarize, stdout, stderr)
	case *state != "" && *summarize == "" && fs.NArg() == 0:
		return filter(stdin, *state, stdout, stderr)
	default:
		fmt.Fprintln(stderr, "usage: go test -json ... | testreport -state FILE\n       testreport -summarize FILE")
		return 64
	}
}

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action      string
	Package     string
	ImportPath  string
	Test        string
	Output      string
	FailedBuild string
}

var (
	// chatter is what a plain (non -v) go test run would not print.
	chatter = regexp.MustCompile(`^\s*(=== (RUN|PAUSE|CONT|NAME)\b|--- PASS: |PASS$)`)
	// packageResult is go test's line for one package.
	packageResult = regexp.MustCompile(`^(ok|FAIL|\?)\s+\S+`)
)

// tally counts test results.
type tally struct{ passed, failed, skipped int }

// filter prints go test -json from in as plain output and records results.
func filter(in io.Reader, statePath string, stdout, stderr io.Writer) int {
	var t tally
	var results []string
	failedTests := map[string]int{} // package -> failed tests
	var failedPackages []string
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 4*1024*1024), 4*1024*1024)
	for sc.Scan() {
		line := sc.Text()
		var e event
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil {
			fmt.Fprintln(stdout, line) // not an event: pass it through
			continue
		}
		switch e.Action {
		case "output", "build-output":
			text := strings.TrimRight(e.Output, "\n")
			if chatter.MatchString(text) {
				continue
			}
			if e.Test == "" && packageResult.MatchString(text) {
				results = append(results, text)
			}
			fmt.Fprintln(stdout, text)
		case "pass", "fail", "skip":
			if e.Test == "" {
				if e.Action == "fail" && failedTests[e.Package] == 0 {
					failedPackages = append(failedPackages, e.Package)
				}
				continue
			}
			switch e.Action {
			case "pass":
				t.passed++
			case "fail":
				t.failed++
				failedTests[e.Package]++
			case "skip":
				t.skipped++
			}
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(stderr, "error: read go test -json: %v\n", err)
		return 1
	}
	// A package that failed outside any test (build error, TestMain,
	// panic, cleanup) counts as one failure.
	t.failed += len(failedPackages)
	for _, p := range failedPackages {
		results = append(results, "FAIL\t"+p+"\t(failed outside any test)")
	}
	if err := appendState(statePath, results, t); err != nil {
		fmt.Fprintf(stderr, "error: write %s: %v\n", statePath, err)
		return 1
	}
	if t.failed > 0 {
		return 1
	}
	return 0
}

// appendState adds results and counts to the state file.
func appendState(path string, results []string, t tally) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for _, r := range results {
		fmt.Fprintf(w, "result %s\n", strings.ReplaceAll(r, "\n", " "))
	}
	fmt.Fprintf(w, "count %d %d %d\n", t.passed, t.failed, t.skipped)
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// summary prints the package lines and the totals of a state file.
func summary(path string, stdout, stderr io.Writer) int {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(stderr, "error: no go test results: %v\n", err)
		return 1
	}
	defer f.Close()
	var t tally
	sc := bufio.NewScanner(f)
	fmt.Fprintln(stdout, "go test results:")
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "result "):
			fmt.Fprintln(stdout, strings.TrimPrefix(line, "result "))
		case strings.HasPrefix(line, "count "):
			var n [3]int
			fields := strings.Fields(line)
			if len(fields) != 4 {
				fmt.Fprintf(stderr, "error: %s: malformed line %q\n", path, line)
				return 1
			}
			for i := range n {
				if n[i], err = strconv.Atoi(fields[i+1]); err != nil {
					fmt.Fprintf(stderr, "error: %s: malformed line %q\n", path, line)
					return 1
				}
			}
			t.passed, t.failed, t.skipped = t.passed+n[0], t.failed+n[1], t.skipped+n[2]
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(stderr, "error: read %s: %v\n", path, err)
		return 1
	}
	fmt.Fprintf(stdout, "tests: %d passed, %d failed, %d skipped\n", t.passed, t.failed, t.skipped)
	if t.failed > 0 || t.passed == 0 {
		return 1
	}
	return 0
}
