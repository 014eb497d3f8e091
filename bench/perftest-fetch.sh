# Sourced by the bench scripts that run PerfTest: fetch_perftest puts
# PerfTest $PT_VERSION and its dependencies under $WORK/lib (Maven Central,
# once; later runs reuse them). The caller sets WORK and PT_VERSION.
fetch_perftest() {
    if ls "$WORK"/lib/perf-test-$PT_VERSION.jar >/dev/null 2>&1; then return; fi
    echo "fetching PerfTest $PT_VERSION and its dependencies from Maven Central..." >&2
    cat > "$WORK/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>beamlab</groupId><artifactId>perftest-fetch</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>com.rabbitmq</groupId><artifactId>perf-test</artifactId><version>$PT_VERSION</version></dependency>
  </dependencies>
</project>
POM
    mvn -q -f "$WORK/pom.xml" dependency:copy-dependencies -DoutputDirectory="$WORK/lib" >&2
}
