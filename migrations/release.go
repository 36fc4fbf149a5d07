package migrations

// PreviousRelease is the commit of the release this one upgrades from, the
// one whose processes still run while an operator rolls this release out
// (README "Upgrading"). Every migration since is expand-only, so that
// release's binaries keep working on this schema: TestPreviousReleaseQueries
// prepares every statement it was seen to send
// (testdata/previous-release-queries.sql) against the current schema, and
// the soak's rolling-upgrade scenario builds it from git and upgrades two
// api and two worker processes from it under load. Update it at each
// release, and re-capture that file then (see the test).
const PreviousRelease = "f5f6b2db4f46bf35d448c552e50ef90f1b9bfedf"
