package ranking

// The SQL other packages read ranking's tables with, where a statement
// must stay one statement (docs/ARCHITECTURE.md, Rules): ranking alone
// writes feedback and ranking_models.

// ModelTrainedAtSQL is an expression for when the ranking model of the
// user whose id is userExpr (a column or parameter of the enclosing
// statement) was last stored: ranking_models.trained_at, which every
// stored model (a first one, or a retraining by the rank_train job) sets,
// or NULL while the user has none. A primary-key probe. The ranked feed's
// token lookup reads it beside the feed row, so the feed's ETag changes
// exactly when the order can: when a model is stored.
func ModelTrainedAtSQL(userExpr string) string {
	return `(SELECT m.trained_at FROM ranking_models m WHERE m.user_id = ` + userExpr + ` AND m.model IS NOT NULL)`
}
