package demo

import (
	"bytes"
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// This file holds the demo's event log: it prints every lease event as it
// happens, with the database's time, and afterwards draws the events of
// each job as a lease timeline in one self-contained HTML file (inline CSS
// and SVG; nothing is fetched from anywhere).
//
// Events never carry a claim token, owner id, payload, login role or URL:
// workers appear under their demo labels ("worker-a"), and the texts are
// written by the demo itself.

// demoEventKind says what happened; it decides how the timeline draws it.
type demoEventKind string

// The kinds of demo events.
const (
	evEnqueued       demoEventKind = "enqueued"        // a producer enqueued the job
	evPolling        demoEventKind = "polling"         // a worker started polling the job's queue
	evNeverClaimed   demoEventKind = "never_claimed"   // a polling worker stopped, never given the job
	evNoJob          demoEventKind = "no_job"          // a claim found nothing claimable
	evClaimed        demoEventKind = "claimed"         // a worker claimed the job (generation 1)
	evReclaimed      demoEventKind = "reclaimed"       // a worker claimed the job after its lease expired
	evRenewed        demoEventKind = "renewed"         // the database extended the lease
	evRenewalFailed  demoEventKind = "renewal_failed"  // a renewal attempt got no answer
	evStale          demoEventKind = "stale"           // the database answered a renewal with stale
	evFrozen         demoEventKind = "frozen"          // the worker's heartbeat stopped reaching the database
	evTrustLost      demoEventKind = "trust_lost"      // the client stopped trusting its claim locally
	evExpired        demoEventKind = "expired"         // the database clock passed lease_expires_at
	evTargetWrite    demoEventKind = "target_write"    // a worker wrote its target row (not committed yet)
	evCompleted      demoEventKind = "completed"       // complete_job committed: SUCCEEDED
	evRefused        demoEventKind = "refused"         // a terminal write was refused with LF001
	evCancelled      demoEventKind = "cancelled"       // an operator cancelled the job
	evHandlerStopped demoEventKind = "handler_stopped" // the worker's handler returned after losing its lease
	evChecked        demoEventKind = "checked"         // the demo checked an outcome in the database
)

// demoEvent is one thing that happened to one job.
type demoEvent struct {
	// At is the database time of the event (clock_timestamp()).
	At time.Time
	// Story is the story number (1 to 3).
	Story int
	// Job is the job_record_id.
	Job int64
	// Actor is who acted: "producer", "operator", "database" or a worker label.
	Actor string
	// Kind says what happened.
	Kind demoEventKind
	// Until is the lease expiry a claim or renewal granted (zero otherwise).
	Until time.Time
	// Text is the printed sentence after the actor.
	Text string

	// arrived is the local monotonic time the event was recorded.
	arrived time.Time
}

// printDelay is how long an event waits before it is printed, so that
// events recorded by different goroutines come out in database-time order.
const printDelay = 150 * time.Millisecond

// demoRecorder prints events as they happen and keeps them for the timeline.
type demoRecorder struct {
	out io.Writer

	mu      sync.Mutex
	pending []demoEvent
	events  []demoEvent
	// summaries holds the one-line outcome of each job, for the timeline.
	summaries map[int64]string
	// stories holds each story's title, for the timeline.
	stories map[int]string

	quit chan struct{}
	done chan struct{}
}

// newDemoRecorder starts the printing goroutine; call close when done.
func newDemoRecorder(out io.Writer) *demoRecorder {
	r := &demoRecorder{out: out, summaries: map[int64]string{}, stories: map[int]string{},
		quit: make(chan struct{}), done: make(chan struct{})}
	go r.loop()
	return r
}

// loop prints the events that have waited long enough.
func (r *demoRecorder) loop() {
	defer close(r.done)
	ticker := time.NewTicker(printDelay / 3)
	defer ticker.Stop()
	for {
		select {
		case <-r.quit:
			return
		case <-ticker.C:
			r.printReady(false)
		}
	}
}

// close prints what is left and stops the printing goroutine.
func (r *demoRecorder) close() {
	select {
	case <-r.quit:
	default:
		close(r.quit)
		<-r.done
	}
	r.printReady(true)
}

// emit records ev and prints it shortly.
func (r *demoRecorder) emit(ev demoEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev.arrived = time.Now()
	r.pending = append(r.pending, ev)
	r.events = append(r.events, ev)
}

// printReady prints the pending events in database-time order: all of them
// when all is true, else the oldest ones that have waited printDelay.
func (r *demoRecorder) printReady(all bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sortEvents(r.pending)
	n := 0
	for _, ev := range r.pending {
		if !all && time.Since(ev.arrived) < printDelay {
			break
		}
		printf(r.out, "  [db %s] %s %s\n", clockTime(ev.At), ev.Actor, ev.Text)
		n++
	}
	r.pending = append(r.pending[:0], r.pending[n:]...)
}

// say prints a line of narration after every pending event.
func (r *demoRecorder) say(format string, args ...any) {
	r.printReady(true)
	r.mu.Lock()
	defer r.mu.Unlock()
	printf(r.out, format+"\n", args...)
}

// story prints a story's heading and remembers its title.
func (r *demoRecorder) story(n int, title, explanation string) {
	r.mu.Lock()
	r.stories[n] = title
	r.mu.Unlock()
	r.say("\nStory %d: %s", n, title)
	// say shows its arguments as single values: one line at a time.
	for line := range strings.SplitSeq(explanation, "\n") {
		r.say("%s", line)
	}
}

// summarize sets the one-line outcome of a job shown on its timeline.
func (r *demoRecorder) summarize(job int64, summary string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.summaries[job] = summary
}

// snapshot returns every event so far in database-time order, and the
// stories and summaries.
func (r *demoRecorder) snapshot() ([]demoEvent, map[int]string, map[int64]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	events := append([]demoEvent(nil), r.events...)
	sortEvents(events)
	stories := make(map[int]string, len(r.stories))
	for k, v := range r.stories {
		stories[k] = v
	}
	summaries := make(map[int64]string, len(r.summaries))
	for k, v := range r.summaries {
		summaries[k] = v
	}
	return events, stories, summaries
}

// sortEvents orders events by database time. The sort is stable, and both
// lists it sorts are kept in recording order among equal times (events are
// appended as they are recorded, and pending stays sorted between appends),
// so events with equal times stay in the order they were recorded.
func sortEvents(events []demoEvent) {
	slices.SortStableFunc(events, func(a, b demoEvent) int { return a.At.Compare(b.At) })
}

// clockTime prints a database time as UTC hours to milliseconds.
func clockTime(t time.Time) string { return t.UTC().Format("15:04:05.000") }

// ---------------------------------------------------------------------------
// The HTML timeline.

//go:embed timeline.html.tmpl
var timelineTemplateText string

// timelineTemplate renders timelinePage. html/template escapes every text
// and attribute value.
var timelineTemplate = template.Must(template.New("timeline").Funcs(template.FuncMap{
	"px": func(f float64) string { return fmt.Sprintf("%.1f", f) },
}).Parse(timelineTemplateText))

// timelinePage is everything the template shows.
type timelinePage struct {
	Title       string
	StartedAt   string
	Where       string
	Policy      string
	Charts      []timelineChart
	GeneratedBy string
}

// timelineChart is the timeline of one job.
type timelineChart struct {
	Heading string
	Story   string
	Summary string
	Width   float64
	Height  float64
	Lanes   []timelineLane
	Grid    []timelineTick
	Bars    []timelineBar
	Lines   []timelineLine
	Marks   []timelineMark
	Rows    []timelineRow
}

// timelineLane is one horizontal lane: a worker, or the job's own lane.
type timelineLane struct {
	Label string
	Y     float64 // top of the lane
	Mid   float64 // vertical middle
	Color string
}

// timelineTick is one grid line of the time axis.
type timelineTick struct {
	X     float64
	Label string
}

// timelineBar is a time span a worker held the job.
type timelineBar struct {
	X, Y, W, H float64
	Color      string
	// Pale marks a span whose lease was granted but no longer renewed.
	Pale  bool
	Title string
}

// timelineLine is a straight line (dashed when Dash is set).
type timelineLine struct {
	X1, Y1, X2, Y2 float64
	Color          string
	Width          float64
	Dash           bool
	Title          string
}

// timelineMark is a point event: a shape with a short label.
type timelineMark struct {
	Shape  string // "circle", "tick", "cross", "diamond", "flag"
	X, Y   float64
	Color  string
	Label  string
	LabelX float64
	LabelY float64
	Anchor string
	Title  string
}

// timelineRow is one line of a chart's event table.
type timelineRow struct {
	Time  string
	Actor string
	Color string
	Text  string
}

// Geometry of a chart, in pixels.
const (
	chartWidth   = 1100.0
	chartLeft    = 120.0
	chartRight   = 30.0
	chartTop     = 34.0
	laneHeight   = 56.0
	barHeight    = 16.0
	chartBottom  = 12.0
	timePadStart = 300 * time.Millisecond
	timePadEnd   = 400 * time.Millisecond
)

// Colours of the timeline (also in the template's legend).
const (
	colorControl  = "#6b7280" // producer, database
	colorOperator = "#7c3aed"
	colorDanger   = "#dc2626"
	colorGood     = "#15803d"
	colorTick     = "#ffffff"
)

// workerColors are the colours given to workers in order of appearance.
var workerColors = []string{"#2563eb", "#ea580c", "#0d9488", "#db2777"}

// actorColor returns the colour of an actor on a chart.
func actorColor(actor string, workers map[string]string) string {
	if c, ok := workers[actor]; ok {
		return c
	}
	if actor == "operator" {
		return colorOperator
	}
	return colorControl
}

// renderTimeline renders events (in database-time order, as snapshot
// returns them; each names its job) as one self-contained HTML page: one
// chart per job, by story, and within a story in the order of the jobs'
// first events.
func renderTimeline(page timelinePage, events []demoEvent, stories map[int]string, summaries map[int64]string) ([]byte, error) {
	byJob := map[int64][]demoEvent{}
	var jobs []int64
	for _, ev := range events {
		if _, ok := byJob[ev.Job]; !ok {
			jobs = append(jobs, ev.Job)
		}
		byJob[ev.Job] = append(byJob[ev.Job], ev)
	}
	// jobs is in the order of first events; the stable sort keeps it within
	// a story.
	slices.SortStableFunc(jobs, func(a, b int64) int { return cmp.Compare(byJob[a][0].Story, byJob[b][0].Story) })
	for _, job := range jobs {
		evs := byJob[job]
		page.Charts = append(page.Charts, buildChart(job, evs, stories[evs[0].Story], summaries[job]))
	}
	var b bytes.Buffer
	err := timelineTemplate.Execute(&b, page)
	return b.Bytes(), err
}

// buildChart lays one job's events out on lanes against database time.
func buildChart(job int64, evs []demoEvent, storyTitle, summary string) timelineChart {
	chart := timelineChart{
		Heading: fmt.Sprintf("Story %d · job %d", evs[0].Story, job),
		Story:   storyTitle,
		Summary: summary,
		Width:   chartWidth,
	}
	// Lanes: the job's own lane (producer, operator, database) first, then
	// one per worker in order of appearance.
	workers := map[string]string{}
	laneOf := map[string]int{}
	lanes := []string{"job"}
	laneOf["job"] = 0
	for _, ev := range evs {
		if isControlActor(ev.Actor) {
			continue
		}
		if _, ok := laneOf[ev.Actor]; !ok {
			laneOf[ev.Actor] = len(lanes)
			workers[ev.Actor] = workerColors[(len(lanes)-1)%len(workerColors)]
			lanes = append(lanes, ev.Actor)
		}
	}
	lane := func(actor string) int {
		if isControlActor(actor) {
			return 0
		}
		return laneOf[actor]
	}
	for i, name := range lanes {
		y := chartTop + float64(i)*laneHeight
		color := colorControl
		if i > 0 {
			color = workers[name]
		}
		chart.Lanes = append(chart.Lanes, timelineLane{Label: name, Y: y, Mid: y + laneHeight/2, Color: color})
	}
	chart.Height = chartTop + float64(len(lanes))*laneHeight + chartBottom

	// Time scale.
	start, end := evs[0].At, evs[0].At
	for _, ev := range evs {
		if ev.At.After(end) {
			end = ev.At
		}
	}
	start, end = start.Add(-timePadStart), end.Add(timePadEnd)
	span := end.Sub(start).Seconds()
	plot := chartWidth - chartLeft - chartRight
	x := func(t time.Time) float64 { return chartLeft + t.Sub(start).Seconds()/span*plot }
	// Grid lines every 1 s, or every 2, 4, 8, ... s so that there are at
	// most 16 of them.
	step := math.Exp2(math.Max(0, math.Ceil(math.Log2(span/16))))
	origin := evs[0].At
	for s := 0.0; ; s += step {
		t := origin.Add(time.Duration(s * float64(time.Second)))
		if t.After(end) {
			break
		}
		label := fmt.Sprintf("+%gs", s)
		if s == 0 {
			label = clockTime(origin)
		}
		chart.Grid = append(chart.Grid, timelineTick{X: x(t), Label: label})
	}

	// The moments that end a holder's span.
	var expiredAt, cancelledAt []time.Time
	for _, ev := range evs {
		switch ev.Kind {
		case evExpired:
			expiredAt = append(expiredAt, ev.At)
		case evCancelled:
			cancelledAt = append(cancelledAt, ev.At)
		}
	}

	// Spans: from each claim to the first completion, expiry or
	// cancellation after it; what the lane did after that (a frozen handler
	// still running, a handler stopping) is a dashed line.
	for _, name := range lanes[1:] {
		li := laneOf[name]
		mid := chart.Lanes[li].Mid
		color := workers[name]
		var claimAt, pollAt time.Time
		var last time.Time
		var haveClaim bool
		for _, ev := range evs {
			if ev.Actor != name {
				continue
			}
			last = ev.At
			switch ev.Kind {
			case evClaimed, evReclaimed:
				claimAt, haveClaim = ev.At, true
			case evPolling:
				pollAt = ev.At
			case evNeverClaimed:
				if !pollAt.IsZero() {
					chart.Lines = append(chart.Lines, timelineLine{X1: x(pollAt), Y1: mid, X2: x(ev.At), Y2: mid,
						Color: color, Width: 2, Dash: true, Title: name + " polled the queue and was never given the job"})
				}
			}
		}
		if !haveClaim {
			continue
		}
		endAt := last
		for _, ev := range evs {
			if ev.Actor == name && ev.Kind == evCompleted && ev.At.After(claimAt) {
				endAt = ev.At
				break
			}
		}
		for _, t := range append(append([]time.Time{}, expiredAt...), cancelledAt...) {
			if t.After(claimAt) && t.Before(endAt) {
				endAt = t
			}
		}
		// After a freeze the lease is still granted but no longer renewed:
		// that part of the span is pale.
		paleFrom := endAt
		for _, ev := range evs {
			if ev.Actor == name && ev.Kind == evFrozen && ev.At.After(claimAt) && ev.At.Before(endAt) {
				paleFrom = ev.At
				break
			}
		}
		chart.Bars = append(chart.Bars, timelineBar{X: x(claimAt), Y: mid - barHeight/2, W: math.Max(x(paleFrom)-x(claimAt), 2),
			H: barHeight, Color: color, Title: fmt.Sprintf("%s held job %d from %s to %s (database time)", name, job,
				clockTime(claimAt), clockTime(endAt))})
		if paleFrom.Before(endAt) {
			chart.Bars = append(chart.Bars, timelineBar{X: x(paleFrom), Y: mid - barHeight/2, W: x(endAt) - x(paleFrom),
				H: barHeight, Color: color, Pale: true, Title: fmt.Sprintf("%s's lease on job %d was still granted until %s, "+
					"but no longer renewed", name, job, clockTime(endAt))})
		}
		if last.After(endAt) {
			chart.Lines = append(chart.Lines, timelineLine{X1: x(endAt), Y1: mid, X2: x(last), Y2: mid,
				Color: color, Width: 2, Dash: true, Title: name + " kept running after it no longer held the job"})
		}
	}

	// Point events.
	labelRow := map[int]int{}
	for _, ev := range evs {
		li := lane(ev.Actor)
		mid := chart.Lanes[li].Mid
		ex := x(ev.At)
		m := timelineMark{X: ex, Y: mid, Title: clockTime(ev.At) + " " + ev.Actor + " " + ev.Text, Anchor: "middle"}
		switch ev.Kind {
		case evRenewed:
			chart.Lines = append(chart.Lines, timelineLine{X1: ex, Y1: mid - barHeight/2 + 2, X2: ex, Y2: mid + barHeight/2 - 2,
				Color: colorTick, Width: 2, Title: m.Title})
			continue
		case evRenewalFailed:
			chart.Lines = append(chart.Lines, timelineLine{X1: ex, Y1: mid - barHeight/2 - 3, X2: ex, Y2: mid + barHeight/2 + 3,
				Color: colorDanger, Width: 1.5, Dash: true, Title: m.Title})
			continue
		case evEnqueued:
			m.Shape, m.Color, m.Label = "circle", colorControl, "enqueued"
		case evClaimed:
			m.Shape, m.Color, m.Label = "circle", actorColor(ev.Actor, workers), "claimed"
		case evReclaimed:
			m.Shape, m.Color, m.Label = "diamond", actorColor(ev.Actor, workers), "reclaimed"
		case evNoJob:
			m.Shape, m.Color, m.Label = "circle", colorControl, "nothing claimable"
		case evPolling:
			m.Shape, m.Color, m.Label = "circle", actorColor(ev.Actor, workers), "polls"
		case evNeverClaimed:
			m.Shape, m.Color, m.Label = "circle", actorColor(ev.Actor, workers), "never given the job"
		case evStale:
			m.Shape, m.Color, m.Label = "cross", colorDanger, "renewal: stale"
		case evFrozen:
			m.Shape, m.Color, m.Label = "flag", colorDanger, "freezes"
		case evTrustLost:
			m.Shape, m.Color, m.Label = "flag", colorDanger, "client gives up"
		case evExpired:
			m.Shape, m.Color, m.Label = "flag", colorDanger, "lease expired"
			chart.Lines = append(chart.Lines, timelineLine{X1: ex, Y1: chartTop - 4, X2: ex, Y2: chart.Height - chartBottom,
				Color: colorDanger, Width: 1.5, Dash: true, Title: m.Title})
		case evCancelled:
			m.Shape, m.Color, m.Label = "flag", colorOperator, "cancelled"
			chart.Lines = append(chart.Lines, timelineLine{X1: ex, Y1: chartTop - 4, X2: ex, Y2: chart.Height - chartBottom,
				Color: colorOperator, Width: 1.5, Dash: true, Title: m.Title})
		case evTargetWrite:
			m.Shape, m.Color, m.Label = "diamond", actorColor(ev.Actor, workers), "target write"
		case evCompleted:
			m.Shape, m.Color, m.Label = "tick", colorGood, "SUCCEEDED"
		case evRefused:
			m.Shape, m.Color, m.Label = "cross", colorDanger, "LF001 refused, rolled back"
		case evHandlerStopped:
			m.Shape, m.Color, m.Label = "flag", actorColor(ev.Actor, workers), "handler stopped"
		case evChecked:
			m.Shape, m.Color, m.Label = "circle", colorControl, "checked"
		}
		// Labels alternate above and below the lane's middle so that
		// neighbours overlap less.
		row := labelRow[li]
		labelRow[li]++
		m.LabelX = ex
		if row%2 == 0 {
			m.LabelY = mid - barHeight/2 - 7
		} else {
			m.LabelY = mid + barHeight/2 + 15
		}
		if ex > chartWidth-chartRight-60 {
			m.Anchor = "end"
		} else if ex < chartLeft+40 {
			m.Anchor = "start"
		}
		chart.Marks = append(chart.Marks, m)
	}

	for _, ev := range evs {
		chart.Rows = append(chart.Rows, timelineRow{Time: clockTime(ev.At), Actor: ev.Actor,
			Color: actorColor(ev.Actor, workers), Text: ev.Text})
	}
	return chart
}

// isControlActor reports whether an actor belongs on the job's own lane.
func isControlActor(actor string) bool {
	switch actor {
	case "producer", "operator", "database", "demo":
		return true
	}
	return strings.HasPrefix(actor, "job")
}
