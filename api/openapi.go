package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/pixbank/pix/api/openapi"
)

// serveContract serves the OpenAPI document name, without authentication:
// GET /openapi/<name>.json (derived from the YAML) and /openapi/<name>.yaml
// (its source).
func serveContract(r gin.IRoutes, name string) error {
	asJSON, err := openapi.JSON(name)
	if err != nil {
		return err
	}
	asYAML := openapi.YAML(name)
	r.GET("/openapi/"+name+".json", func(c *gin.Context) { c.Data(http.StatusOK, "application/json; charset=utf-8", asJSON) })
	r.GET("/openapi/"+name+".yaml", func(c *gin.Context) { c.Data(http.StatusOK, "application/yaml; charset=utf-8", asYAML) })
	return nil
}
