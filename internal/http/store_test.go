package http

import "github.com/kubegcd/kubegcd/internal/db"

// The daemon serves the API from a *db.DB.
var _ Store = (*db.DB)(nil)
