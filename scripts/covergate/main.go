package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// prefixList collects repeated -prefix flags.
type prefixList []string

// String lists the prefixes given so far (flag.Value).
func (p *prefixList) String() string { return strings.Join(*p, ",") }

// Set adds one -prefix value (flag.Value).
func (p *prefixList) Set(v string) error { *p = append(*p, strings.TrimSuffix(v, "/")); return nil }

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("covergate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	profile := fs.String("profile", "", "coverage profile to read (go test -coverprofile or go tool covdata textfmt)")
	name := fs.String("name", "", "name to print for the covered code")
	min := fs.Float64("min", 100, "lowest accepted statement coverage, in percent")
	var prefixes prefixList
	fs.Var(&prefixes, "prefix", "import path whose files count (repeatable; default: every file)")
	if err := fs.Parse(args); err != nil {
		return 64
	}
	if *profile == "" || *name == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: covergate -profile FILE -name NAME [-min PERCENT] [-prefix IMPORTPATH]...")
		return 64
	}
	f, err := os.Open(*profile)
	if err != nil {
		fmt.Fprintf(stderr, "error: coverage %s: %v\n", *name, err)
		return 1
	}
	defer f.Close()
	blocks, err := readProfile(f, prefixes)
	if err != nil {
		fmt.Fprintf(stderr, "error: coverage %s: read %s: %v\n", *name, *profile, err)
		return 1
	}
	covered, total := 0, 0
	var missed []block
	for _, b := range blocks {
		total += b.statements
		if b.count > 0 {
			covered += b.statements
		} else if b.statements > 0 {
			missed = append(missed, b)
		}
	}
	if total == 0 {
		fmt.Fprintf(stderr, "error: coverage %s: the profile has no statement under %v\n", *name, prefixes)
		return 1
	}
	pct := 100 * float64(covered) / float64(total)
	fmt.Fprintf(stdout, "coverage %s: %.1f%% of %d statements (gate %.1f%%)\n", *name, floor1(pct), total, *min)
	// covered/total >= min/100, without floating-point rounding.
	if float64(covered)*100 >= *min*float64(total) {
		return 0
	}
	sort.Slice(missed, func(i, j int) bool { return missed[i].key < missed[j].key })
	fmt.Fprintf(stdout, "coverage %s: FAIL, %d statements in %d blocks never ran:\n", *name, total-covered, len(missed))
	for i, b := range missed {
		if i == 60 {
			fmt.Fprintf(stdout, "  ... and %d more blocks\n", len(missed)-i)
			break
		}
		fmt.Fprintf(stdout, "  %s (%d statements)\n", b.key, b.statements)
	}
	return 1
}

// block is one profile block: file:startLine.startCol,endLine.endCol.
type block struct {
	key        string
	statements int
	count      int64
}

// readProfile parses a text profile, keeping the blocks of files under one
// of prefixes (all files when there is none) and merging repeated blocks.
func readProfile(r io.Reader, prefixes []string) ([]block, error) {
	merged := map[string]*block{}
	var order []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "mode:") {
			continue
		}
		// file:1.2,3.4 statements count
		fields := strings.Fields(text)
		if len(fields) != 3 {
			return nil, fmt.Errorf("line %d: want \"file:range statements count\", got %q", line, text)
		}
		statements, err1 := strconv.Atoi(fields[1])
		count, err2 := strconv.ParseInt(fields[2], 10, 64)
		colon := strings.LastIndex(fields[0], ":")
		if err1 != nil || err2 != nil || colon < 0 {
			return nil, fmt.Errorf("line %d: malformed %q", line, text)
		}
		if !underPrefix(fields[0][:colon], prefixes) {
			continue
		}
		b, ok := merged[fields[0]]
		if !ok {
			b = &block{key: fields[0], statements: statements}
			merged[fields[0]] = b
			order = append(order, fields[0])
		}
		b.count += count
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make([]block, 0, len(order))
	for _, k := range order {
		out = append(out, *merged[k])
	}
	return out, nil
}

// underPrefix reports whether file (an import path plus file name) lies in
// one of the prefixes' packages or below them.
func underPrefix(file string, prefixes []string) bool {
	if len(prefixes) == 0 {
		return true
	}
	for _, p := range prefixes {
		if strings.HasPrefix(file, p+"/") {
			return true
		}
	}
	return false
}

// floor1 rounds down to one decimal.
func floor1(v float64) float64 { return float64(int64(v*10)) / 10 }
