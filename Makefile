# beamlab: `make` builds ./beamlab, `make test` runs everything CI runs.
REBAR ?= rebar3

.PHONY: all escript compile test eunit ct dialyzer xref docs clean quickstart architecture-map

all: escript

escript:
	$(REBAR) escriptize
	# Replace ./beamlab atomically: a run starting during the copy must not
	# read half an archive.
	cp _build/default/bin/beamlab ./beamlab.tmp
	chmod +x ./beamlab.tmp
	mv -f ./beamlab.tmp ./beamlab

compile:
	$(REBAR) compile

eunit:
	$(REBAR) eunit

ct: escript
	$(REBAR) ct

dialyzer:
	$(REBAR) dialyzer

xref:
	$(REBAR) xref

docs:
	$(REBAR) edoc

# docs/architecture.md's module map, regenerated from src/ (a unit test
# fails when it is out of date).
architecture-map:
	escript scripts/architecture-map.escript

# The full suite: unit tests, properties, CLI and integration tests through the
# built escript, then the static checks.
test:
	./scripts/test.sh

quickstart:
	./scripts/quickstart.sh

clean:
	$(REBAR) clean
	rm -f ./beamlab
