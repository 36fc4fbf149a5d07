package catalog

// SetBackfillScanned sets the hook BackfillSearch calls after each chunk
// of its scan, before it takes the writers' lock (tests hold a backfill
// there).
func SetBackfillScanned(st *Store, fn func(normalized string, scanned int)) { st.backfillScanned = fn }
