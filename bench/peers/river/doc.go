// Command river is the River peer of leasefence's end-to-end benchmark
// (bench/e2e.go), in a module of its own so that leasefence's module never
// depends on River. It installs River's schema in the database it is given,
// inserts -jobs no-op jobs (not timed), then starts a River client with
// -workers workers on the default queue and times how long they take to
// work and complete every job. It prints one JSON line:
//
//	{"jobs": 3000, "seconds": 0.41, "jobs_per_second": 7317}
//
// -config defaults uses River's defaults but MaxWorkers (a FetchCooldown of
// 100 ms, a FetchPollInterval of 1 s); -config matched sets FetchCooldown
// and FetchPollInterval to River's 1 ms minimum, so that River, like the
// leasefence worker, fetches again as soon as it has room.
//
// -mode enqueue instead times InsertManyFast of -jobs no-op jobs in batches
// of 10,000 (the enqueue comparison with leasefence's enqueue_jobs) and
// prints the same line.
package main
