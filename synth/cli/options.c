/*
 * options.c - the option table, one parser per group, one check per group
 * (options.h).  Flags are data: a subcommand lists the ids it takes and
 * opt_parse builds getopt_long's tables from the rows, so a long name, its
 * short letter and its meaning cannot drift between subcommands.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "options.h"
#include "sim_cost.h"

typedef struct opt_row {
    opt_group_t group;
    const char *name;       /* long name */
    const char *alias;      /* a second long name, or NULL */
    char letter;            /* short option, or 0 */
    bool has_arg;
} opt_row_t;

/* Short letters mean one option everywhere they are accepted. */
static const opt_row_t rows[OPT_COUNT] = {
    [OPT_TOPO]        = { OPT_GROUP_TOPO, "topo", NULL, 't', true },
    [OPT_ALPHA]       = { OPT_GROUP_TOPO, "alpha", NULL, 0, true },
    [OPT_BW]          = { OPT_GROUP_TOPO, "bw", NULL, 0, true },
    [OPT_ALGO]        = { OPT_GROUP_SYNTH, "algo", "algos", 'a', true },
    [OPT_COLL]        = { OPT_GROUP_SYNTH, "coll", NULL, 'c', true },
    [OPT_ROOT]        = { OPT_GROUP_SYNTH, "root", NULL, 0, true },
    [OPT_STRAGGLER]   = { OPT_GROUP_SYNTH, "straggler", NULL, 0, true },
    [OPT_PHASE0]      = { OPT_GROUP_SYNTH, "phase0", NULL, 0, true },
    [OPT_PIPELINE]    = { OPT_GROUP_SYNTH, "pipeline", "pipelines", 0, true },
    [OPT_CHUNKS]      = { OPT_GROUP_SYNTH, "chunks", NULL, 0, true },
    [OPT_SEED]        = { OPT_GROUP_SYNTH, "seed", NULL, 0, true },
    [OPT_SIZE]        = { OPT_GROUP_SYNTH, "size", NULL, 0, true },
    [OPT_TIME_LIMIT]  = { OPT_GROUP_SYNTH, "time-limit", NULL, 0, true },
    [OPT_MIP_GAP]     = { OPT_GROUP_SYNTH, "mip-gap", NULL, 0, true },
    [OPT_MILP_M]      = { OPT_GROUP_SYNTH, "milp-m", NULL, 0, true },
    [OPT_NODE_LIMIT]  = { OPT_GROUP_SYNTH, "node-limit", NULL, 0, true },
    [OPT_CHUNK_SIZES] = { OPT_GROUP_SYNTH, "chunk-sizes", NULL, 0, true },
    [OPT_WRITE_LP]    = { OPT_GROUP_SYNTH, "write-lp", NULL, 0, true },
    [OPT_CHANNELS]    = { OPT_GROUP_SYNTH, "channels", NULL, 0, true },
    [OPT_SIZES]       = { OPT_GROUP_SIM, "sizes", NULL, 's', true },
    [OPT_TYPE]        = { OPT_GROUP_SIM, "type", NULL, 0, true },
    [OPT_MODE]        = { OPT_GROUP_SIM, "mode", NULL, 'm', true },
    [OPT_DELAY]       = { OPT_GROUP_SIM, "straggler-delay", NULL, 0, true },
    [OPT_ARRIVALS]    = { OPT_GROUP_SIM, "arrivals", NULL, 0, true },
    [OPT_LOCAL_BW]    = { OPT_GROUP_SIM, "local-bw", NULL, 0, true },
    [OPT_PROTO]       = { OPT_GROUP_SIM, "proto", NULL, 0, true },
    [OPT_WINDOW]      = { OPT_GROUP_SIM, "window", NULL, 0, true },
    [OPT_OUTPUT]      = { OPT_GROUP_OUT, "output", NULL, 'o', true },
    [OPT_JSON]        = { OPT_GROUP_OUT, "json", NULL, 'j', false },
    [OPT_CSV]         = { OPT_GROUP_OUT, "csv", NULL, 0, false },
    [OPT_DOT]         = { OPT_GROUP_OUT, "dot", NULL, 'd', false },
    [OPT_QUIET]       = { OPT_GROUP_OUT, "quiet", NULL, 'q', false },
    [OPT_HELP]        = { OPT_GROUP_OUT, "help", NULL, 'h', false },
    [OPT_RANK]        = { OPT_GROUP_OWN, "rank", NULL, 'r', true },
    [OPT_PLOT]        = { OPT_GROUP_OWN, "plot", NULL, 0, true },
    [OPT_TIME]        = { OPT_GROUP_OWN, "time", NULL, 0, false },
    [OPT_MAX_CARD]    = { OPT_GROUP_OWN, "max-cardinality", NULL, 0, false },
    [OPT_ORDER]       = { OPT_GROUP_OWN, "order", NULL, 0, true },
    [OPT_CHILDREN]    = { OPT_GROUP_OWN, "children", NULL, 0, true },
    [OPT_PRUNE]       = { OPT_GROUP_OWN, "prune", NULL, 0, true },
    [OPT_COARSE]      = { OPT_GROUP_OWN, "coarse", NULL, 0, true },
    [OPT_FULL_GRID]   = { OPT_GROUP_OWN, "full-grid", NULL, 0, false },
    [OPT_EMIT]        = { OPT_GROUP_OWN, "emit", NULL, 0, true },
    [OPT_VS_NCCL]     = { OPT_GROUP_OWN, "vs-nccl", NULL, 0, false },
    [OPT_EXACT]       = { OPT_GROUP_OWN, "exact", NULL, 0, false },
    [OPT_MSCCL]       = { OPT_GROUP_OWN, "msccl", NULL, 0, false },
    [OPT_NCHANNELS]   = { OPT_GROUP_OWN, "nchannels", NULL, 0, true },
    [OPT_MIN_BYTES]   = { OPT_GROUP_OWN, "min-bytes", NULL, 0, true },
    [OPT_MAX_BYTES]   = { OPT_GROUP_OWN, "max-bytes", NULL, 0, true },
    [OPT_INPLACE]     = { OPT_GROUP_OWN, "inplace", NULL, 0, true },
    [OPT_OUTOFPLACE]  = { OPT_GROUP_OWN, "outofplace", NULL, 0, true },
    [OPT_MAX_STEPS]   = { OPT_GROUP_OWN, "max-steps", NULL, 0, true },
    [OPT_MAX_TBS]     = { OPT_GROUP_OWN, "max-tbs", NULL, 0, true },
    [OPT_NAME]        = { OPT_GROUP_OWN, "name", NULL, 0, true },
    [OPT_NO_LIMITS]   = { OPT_GROUP_OWN, "no-limits", NULL, 0, false },
};

/* getopt_long's value for an option: its letter, or 256 + id. */
static int opt_val(opt_id_t id)
{
    return rows[id].letter ? rows[id].letter : 256 + (int)id;
}

static int val_id(int val)
{
    for (int i = 0; i < OPT_COUNT; i++)
        if (opt_val((opt_id_t)i) == val)
            return i;
    return -1;
}

const char *opt_name(opt_id_t id)
{
    return id >= 0 && id < OPT_COUNT ? rows[id].name : "?";
}

opt_group_t opt_group(opt_id_t id)
{
    return id >= 0 && id < OPT_COUNT ? rows[id].group : OPT_GROUP_COUNT;
}

void opt_init(cli_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->synth.coll = CCS_COLL_ALLREDUCE;
    o->synth.straggler = -1;
    o->synth.mip_gap = -1;
    o->sim.dtype = CCS_FLOAT32;
    o->sim.mode = SIM_MODE_RANK;
    o->out.fmt = OPT_FMT_TEXT;
}

void opt_free(cli_opts_t *o)
{
    if (o == NULL)
        return;
    free(o->sim.sizes);
    o->sim.sizes = NULL;
    o->sim.nsizes = 0;
}

/* ---- values ---- */

static ccs_status_t bad(ccs_err_t *err, opt_id_t id, const char *arg,
                        const char *want)
{
    return ccs_err_set(err, CCS_ERR_INVALID, "bad --%s '%s' (%s)",
                       rows[id].name, arg, want);
}

/* A time with a unit; `unit` is the one suggested for a bare number. */
static ccs_status_t time_value(opt_id_t id, const char *arg, bool positive,
                               const char *unit, double *out, ccs_err_t *err)
{
    double v;

    if (units_parse_time_strict(arg, &v) && (!positive || v > 0)) {
        *out = v;
        return CCS_OK;
    }
    if (units_parse_double(arg, &v) && v > 0)
        return ccs_err_set(err, CCS_ERR_INVALID,
                           "--%s %s: %s what? write %s%s (units s, ms, us, "
                           "ns)", rows[id].name, arg, arg, arg, unit);
    return bad(err, id, arg, positive ? "a time > 0 with a unit, e.g. 5ms"
                                      : "a time >= 0 with a unit, e.g. 5ms");
}

static ccs_status_t int_value(opt_id_t id, const char *arg, long lo,
                              long hi, const char *want, long *out,
                              ccs_err_t *err)
{
    if (!units_parse_int(arg, lo, hi, out))
        return bad(err, id, arg, want);
    return CCS_OK;
}

/* "1,2,4" into out[max]; with `words`, "auto" sets *autop and "none"
 * adds nothing.  Values in lo..hi. */
static bool int_list(const char *spec, bool words, long lo, long hi,
                     uint32_t *out, uint32_t max, uint32_t *n, bool *autop)
{
    char buf[256], *save = NULL, *tok;
    long v;

    if (strlen(spec) >= sizeof(buf) || spec[0] == '\0')
        return false;
    strcpy(buf, spec);
    *n = 0;
    *autop = false;
    for (tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (words && strcmp(tok, "auto") == 0) {
            *autop = true;
            continue;
        }
        if (words && strcmp(tok, "none") == 0)
            continue;
        if (*n == max || !units_parse_int(tok, lo, hi, &v))
            return false;
        out[(*n)++] = (uint32_t)v;
    }
    return true;
}

/* ---- group parsers ---- */

ccs_status_t opt_topo_set(opt_topo_t *t, opt_id_t id, const char *arg,
                          ccs_err_t *err)
{
    switch (id) {
    case OPT_TOPO:
        t->spec = arg;
        return CCS_OK;
    case OPT_ALPHA:
        return time_value(id, arg, true, "us", &t->over.alpha_s, err);
    case OPT_BW:
        if (!units_parse_bw(arg, &t->over.bw_Bps))
            return bad(err, id, arg, "a bandwidth > 0, e.g. 450GB/s or "
                       "100Gb/s");
        return CCS_OK;
    default:
        return ccs_err_set(err, CCS_ERR_INVALID, "--%s is no topology "
                           "option", opt_name(id));
    }
}

ccs_status_t opt_synth_set(opt_synth_t *s, opt_id_t id, const char *arg,
                           ccs_err_t *err)
{
    ccs_status_t st = CCS_OK;
    long v;

    switch (id) {
    case OPT_ALGO:
        s->algo = arg;
        break;
    case OPT_COLL:
        if (ccs_coll_parse(arg, &s->coll) != CCS_OK)
            return ccs_err_set(err, CCS_ERR_INVALID, "unknown collective "
                               "'%s' (allreduce, reducescatter, allgather, "
                               "reduce, broadcast, alltoall)", arg);
        break;
    case OPT_ROOT:
    case OPT_STRAGGLER:
        st = int_value(id, arg, 0, CCS_MAX_RANKS - 1, "a rank >= 0", &v, err);
        if (st == CCS_OK && id == OPT_ROOT) {
            s->root = (int32_t)v;
            s->root_given = true;
        }
        else if (st == CCS_OK)
            s->straggler = (int32_t)v;
        break;
    case OPT_PHASE0:
        s->phase0 = arg;
        break;
    case OPT_PIPELINE: {
        bool autop;
        /* tune adds factor 1 to the list, hence one less */
        if (!int_list(arg, false, 1, 1024, s->pipeline, OPT_MAX_LIST - 1,
                      &s->npipeline, &autop))
            return bad(err, id, arg, "factors 1..1024, e.g. 2 or 1,2,4,8");
        break;
    }
    case OPT_CHANNELS: {
        bool autoc;
        if (!int_list(arg, false, 1, 64, s->channels, OPT_MAX_LIST,
                      &s->nchannels, &autoc))
            return bad(err, id, arg, "channel counts 1..64, e.g. 8 or 2,4,8");
        break;
    }
    case OPT_CHUNKS:
        if (!int_list(arg, true, 1, CCS_MAX_CHUNKS, s->chunks, OPT_MAX_LIST,
                      &s->nchunks, &s->chunks_auto))
            return bad(err, id, arg, "chunk counts, e.g. 8 or 4,8; tune "
                       "also takes auto and none");
        s->chunks_given = true;
        break;
    case OPT_SEED:
        st = int_value(id, arg, 0, __LONG_MAX__, "an integer >= 0", &v, err);
        if (st == CCS_OK)
            s->seed = (uint64_t)v;
        break;
    case OPT_SIZE:
        if (!units_parse_size(arg, &s->size_bytes) || s->size_bytes <= 0)
            return bad(err, id, arg, "a size > 0, e.g. 256M");
        break;
    case OPT_TIME_LIMIT:
        st = time_value(id, arg, true, "s", &s->time_limit_s, err);
        break;
    case OPT_MIP_GAP:
        if (!units_parse_double(arg, &s->mip_gap) || s->mip_gap < 0)
            return bad(err, id, arg, "a number >= 0, e.g. 0.01");
        break;
    case OPT_MILP_M:
        st = int_value(id, arg, 1, 64, "1..64", &v, err);
        if (st == CCS_OK)
            s->milp_m = (uint32_t)v;
        break;
    case OPT_NODE_LIMIT:
        st = int_value(id, arg, 0, INT32_MAX, "0: none, or a count", &v,
                       err);
        if (st == CCS_OK)
            s->milp_nodes = v == 0 ? -1 : (int32_t)v;
        break;
    case OPT_CHUNK_SIZES:
        s->chunk_sizes = arg;
        break;
    case OPT_WRITE_LP:
        s->write_lp = arg;
        break;
    default:
        return ccs_err_set(err, CCS_ERR_INVALID, "--%s is no synthesis "
                           "option", opt_name(id));
    }
    /* --size also sizes stragglar's pipeline blocks (checked below). */
    if (st == CCS_OK && id > OPT_SIZE && id <= OPT_WRITE_LP &&
        s->solver_opt == NULL)
        s->solver_opt = rows[id].name;
    return st;
}

ccs_status_t opt_sim_set(opt_sim_t *m, opt_id_t id, const char *arg,
                         ccs_err_t *err)
{
    switch (id) {
    case OPT_SIZES: {
        double *sizes = NULL;
        uint32_t n = 0;
        ccs_status_t st = sim_parse_sizes(arg, &sizes, &n, err);

        if (st != CCS_OK)
            return st;
        free(m->sizes);
        m->sizes = sizes;       /* owned by m, freed in opt_free */
        m->nsizes = n;
        return CCS_OK;
    }
    case OPT_TYPE:
        if (ccs_dtype_parse(arg, &m->dtype) != CCS_OK)
            return ccs_err_set(err, CCS_ERR_INVALID, "unknown --type '%s' "
                               "(e.g. float32, bfloat16, int32)", arg);
        return CCS_OK;
    case OPT_MODE:
        if (sim_mode_parse(arg, &m->mode) != CCS_OK)
            return bad(err, id, arg, "rank, barrier or dataflow");
        return CCS_OK;
    case OPT_WINDOW: {
        char *end = NULL;
        unsigned long v;

        errno = 0;
        v = arg[0] >= '0' && arg[0] <= '9' ? strtoul(arg, &end, 10) : 0;
        if (end == NULL || *end != '\0' || errno != 0 || v < 1 ||
            v > 1000000)
            return bad(err, id, arg, "a number of steps, 1 to 1000000");
        m->window = (uint32_t)v;
        return CCS_OK;
    }
    case OPT_DELAY:
        m->have_delay = true;
        return time_value(id, arg, false, "ms", &m->delay_s, err);
    case OPT_ARRIVALS:
        m->arrivals = arg;
        return CCS_OK;
    case OPT_LOCAL_BW:
        if (!units_parse_bw(arg, &m->local_bw_Bps))
            return bad(err, id, arg, "a bandwidth > 0, e.g. 200GB/s");
        return CCS_OK;
    case OPT_PROTO:
        m->proto_given = true;
        m->proto_auto = strcmp(arg, "auto") == 0;
        if (m->proto_auto) {
            m->proto = SIM_PROTO_PLAN;
            return CCS_OK;
        }
        if (sim_proto_parse(arg, &m->proto, NULL) != CCS_OK)
            return bad(err, id, arg, "ll, ll128, simple, ideal or auto");
        return CCS_OK;
    default:
        return ccs_err_set(err, CCS_ERR_INVALID, "--%s is no simulation "
                           "option", opt_name(id));
    }
}

ccs_status_t opt_out_set(opt_out_t *u, opt_id_t id, const char *arg,
                         ccs_err_t *err)
{
    static const char *const fmt_flag[] = {
        [OPT_FMT_TEXT] = "", [OPT_FMT_JSON] = "--json",
        [OPT_FMT_CSV] = "--csv", [OPT_FMT_DOT] = "--dot",
    };
    opt_fmt_t f;

    switch (id) {
    case OPT_OUTPUT:
        u->output = arg;
        return CCS_OK;
    case OPT_QUIET:
        u->quiet = true;
        return CCS_OK;
    case OPT_JSON:
    case OPT_CSV:
    case OPT_DOT:
        f = id == OPT_JSON ? OPT_FMT_JSON
            : id == OPT_CSV ? OPT_FMT_CSV : OPT_FMT_DOT;
        if (u->fmt != OPT_FMT_TEXT && u->fmt != f)
            return ccs_err_set(err, CCS_ERR_INVALID, "%s and %s exclude "
                               "each other", fmt_flag[u->fmt], fmt_flag[f]);
        u->fmt = f;
        return CCS_OK;
    default:
        return ccs_err_set(err, CCS_ERR_INVALID, "--%s is no output option",
                           opt_name(id));
    }
}

/* ---- checks ---- */

ccs_status_t opt_topo_check(const opt_topo_t *t, bool required,
                            ccs_err_t *err)
{
    if (required && t->spec == NULL)
        return ccs_err_set(err, CCS_ERR_INVALID, "--topo is required "
                           "(a built-in spec such as switch:8, or a YAML "
                           "file; see 'ccsynth list')");
    return CCS_OK;
}

bool opt_algo_uses_straggler(const char *algo)
{
    /* Only StragglAR builds its schedule around the late rank; the
     * others are the same schedule whoever is late. */
    return algo != NULL && strcmp(algo, "stragglar") == 0;
}

ccs_status_t opt_synth_check(const opt_synth_t *s, bool single,
                             ccs_err_t *err)
{
    char buf[512], *save = NULL, *tok;
    const char *names[64];
    uint32_t n = 0;
    bool milp = false, strag = false;

    if (s->algo == NULL && single)
        return ccs_err_set(err, CCS_ERR_INVALID, "--algo is required (see "
                           "'ccsynth list')");
    if (single && s->nchannels > 1)
        return ccs_err_set(err, CCS_ERR_INVALID, "--channels takes one "
                           "count here, not a list");
    if (single && s->npipeline > 1)
        return ccs_err_set(err, CCS_ERR_INVALID, "--pipeline takes one "
                           "factor here, not a list");
    if (single && (s->nchunks > 1 || s->chunks_auto ||
                   (s->chunks_given && s->nchunks == 0)))
        return ccs_err_set(err, CCS_ERR_INVALID, "--chunks takes one count "
                           "here");
    if (s->algo != NULL) {
        if (strlen(s->algo) >= sizeof(buf) || s->algo[0] == '\0')
            return ccs_err_set(err, CCS_ERR_INVALID, "bad --algo '%s'",
                               s->algo);
        strcpy(buf, s->algo);
        for (tok = strtok_r(buf, ",", &save); tok != NULL;
             tok = strtok_r(NULL, ",", &save)) {
            if (algo_find(tok) == NULL)
                return ccs_err_set(err, CCS_ERR_INVALID, "unknown algorithm "
                                   "'%s' (see 'ccsynth list')", tok);
            for (uint32_t i = 0; i < n; i++)
                if (strcmp(names[i], tok) == 0)
                    return ccs_err_set(err, CCS_ERR_INVALID, "algorithm "
                                       "'%s' listed twice", tok);
            if (n == sizeof(names) / sizeof(names[0]))
                return ccs_err_set(err, CCS_ERR_INVALID, "too many "
                                   "algorithms in --algo");
            names[n++] = tok;
            milp = milp || strcmp(tok, "milp") == 0;
            strag = strag || strcmp(tok, "stragglar") == 0;
        }
        if (n == 0)
            return ccs_err_set(err, CCS_ERR_INVALID, "--algo is empty");
        if (single && n > 1)
            return ccs_err_set(err, CCS_ERR_INVALID, "--algo takes one "
                               "algorithm here, not a list");
    }
    /* The solver's options mean nothing to the other algorithms: refuse
     * them rather than ignore them. */
    if (s->solver_opt != NULL && !milp)
        return ccs_err_set(err, CCS_ERR_INVALID, "--%s is an option of "
                           "--algo milp%s", s->solver_opt,
                           single ? "" : " (name milp in --algos)");
    if (s->size_bytes > 0 && !milp && !strag)
        return ccs_err_set(err, CCS_ERR_INVALID, "--size is an option of "
                           "--algo milp or stragglar%s",
                           single ? "" : " (name one in --algos)");
    if (s->phase0 != NULL && !strag)
        return ccs_err_set(err, CCS_ERR_INVALID, "--phase0 is an option of "
                           "--algo stragglar");
    if (s->root_given && !ccs_coll_rooted(s->coll))
        return ccs_err_set(err, CCS_ERR_INVALID, "--root: %s has no root "
                           "(reduce and broadcast have)",
                           ccs_coll_str(s->coll));
    return CCS_OK;
}

void opt_straggler_note(const char *cmd, const cli_opts_t *o,
                        const char *algos, bool simulated)
{
    char buf[512], others[512] = "", *save = NULL, *tok;
    size_t used = 0;
    int n = 0;

    if (o->synth.straggler < 0 || o->out.quiet || algos == NULL ||
        strlen(algos) >= sizeof(buf))
        return;
    strcpy(buf, algos);
    for (tok = strtok_r(buf, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        if (opt_algo_uses_straggler(tok))
            continue;
        used += (size_t)snprintf(others + used, sizeof(others) - used,
                                 "%s%s", used ? ", " : "", tok);
        n++;
    }
    if (n == 0)
        return;
    fprintf(stderr, "ccsynth %s: note: --straggler %d: %s ignore%s it (only "
            "stragglar builds its schedule around the late rank)%s\n", cmd,
            o->synth.straggler, others, n > 1 ? "" : "s",
            simulated ? "; the simulator still delays that rank for every "
                        "algorithm" : "");
}

ccs_status_t opt_sim_check(const opt_sim_t *m, int32_t straggler,
                           int32_t dflt, int32_t *rank, ccs_err_t *err)
{
    if (straggler >= 0 && !m->have_delay)
        return ccs_err_set(err, CCS_ERR_INVALID, "--straggler %d needs "
                           "--straggler-delay: when rank %d arrives (e.g. "
                           "5ms, or 0)", straggler, straggler);
    if (m->have_delay && straggler < 0 && dflt < 0)
        return ccs_err_set(err, CCS_ERR_INVALID, "--straggler-delay needs "
                           "--straggler: the rank that arrives late");
    *rank = straggler >= 0 ? straggler : m->have_delay ? dflt : -1;
    return CCS_OK;
}

ccs_status_t opt_rank_check(const char *what, int32_t rank,
                            uint32_t nranks, ccs_err_t *err)
{
    if (rank >= 0 && (uint32_t)rank >= nranks)
        return ccs_err_set(err, CCS_ERR_INVALID, "%s %d out of range 0..%u",
                           what, rank, nranks - 1);
    return CCS_OK;
}

ccs_status_t opt_check_sweep(cli_opts_t *o, const char *dflt_sizes,
                             int32_t *rank, ccs_err_t *err)
{
    ccs_status_t st = opt_topo_check(&o->topo, true, err);

    if (st == CCS_OK)
        st = opt_synth_check(&o->synth, false, err);
    if (st == CCS_OK)
        st = opt_sim_check(&o->sim, o->synth.straggler, -1, rank, err);
    if (st == CCS_OK)
        st = opt_sim_sizes(&o->sim, dflt_sizes, err);
    return st;
}

int opt_load_sweep_topo(const char *cmd, const cli_opts_t *o, int32_t rank,
                        topo_t **out)
{
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    int rc = cli_load_topo(cmd, o->topo.spec, &o->topo.over, out);

    if (rc != CLI_EXIT_OK)
        return rc;
    st = opt_rank_check("--straggler", rank, (uint32_t)(*out)->ngpus, &err);
    if (st != CCS_OK) {
        topo_destroy(*out);
        *out = NULL;
        return cli_fail_status(cmd, st, &err);
    }
    return CLI_EXIT_OK;
}

ccs_status_t opt_sim_sizes(opt_sim_t *m, const char *dflt, ccs_err_t *err)
{
    if (m->sizes != NULL)
        return CCS_OK;
    return sim_parse_sizes(dflt, &m->sizes, &m->nsizes, err);
}

void opt_fill_algo_params(const cli_opts_t *o, algo_params_t *p)
{
    const opt_synth_t *s = &o->synth;

    algo_params_init(p);
    p->coll = s->coll;
    p->root = s->root;
    p->straggler = s->straggler;
    p->stragglar.phase0 = s->phase0;
    p->pipeline = s->npipeline > 0 ? s->pipeline[0] : 1;
    p->nchunks = s->nchunks > 0 && !s->chunks_auto ? s->chunks[0] : 0;
    p->seed = s->seed;
    p->channels = s->nchannels > 0 ? s->channels[0] : 0;
    p->size_bytes = s->size_bytes;
    p->milp.time_limit_s = s->time_limit_s;
    p->milp.mip_gap = s->mip_gap;
    p->milp.m = s->milp_m;
    p->milp.nodes = s->milp_nodes;
    p->milp.chunk_sizes = s->chunk_sizes;
    p->milp.want_lp = s->write_lp != NULL;
    /* The MILP checks its piece sizes in the simulator. */
    p->milp.cost = sim_cost_time;
    p->milp.cost_ctx = NULL;
}

void opt_fill_sim_opts(const cli_opts_t *o, int32_t rank, sim_opts_t *so)
{
    sim_opts_init(so);
    so->mode = o->sim.mode;
    so->window = o->sim.window;
    so->straggler = rank;
    so->straggler_delay_s = rank >= 0 ? o->sim.delay_s : 0;
    so->elem_bytes = (uint32_t)ccs_dtype_size(o->sim.dtype);
    so->local_bw_Bps = o->sim.local_bw_Bps;
    so->proto = o->sim.proto;
}

/* ---- the parser ---- */

static ccs_status_t set_one(cli_opts_t *o, opt_id_t id, const char *arg,
                            ccs_err_t *err)
{
    switch (rows[id].group) {
    case OPT_GROUP_TOPO:
        return opt_topo_set(&o->topo, id, arg, err);
    case OPT_GROUP_SYNTH:
        return opt_synth_set(&o->synth, id, arg, err);
    case OPT_GROUP_SIM:
        return opt_sim_set(&o->sim, id, arg, err);
    case OPT_GROUP_OUT:
        return opt_out_set(&o->out, id, arg, err);
    default:
        o->own[id] = arg != NULL ? arg : "";
        return CCS_OK;
    }
}

int opt_parse(const opt_cmd_t *cmd, int argc, char **argv, cli_opts_t *o)
{
    struct option longopts[2 * OPT_COUNT + 1];
    char shorts[2 + 2 * OPT_COUNT + 1];
    bool take[OPT_COUNT] = { false };
    size_t nl = 0, ns = 0;
    ccs_err_t err = { { 0 } };
    ccs_status_t st;
    int c;

    opt_init(o);
    take[OPT_HELP] = true;
    for (size_t i = 0; cmd->ids[i] != OPT_END; i++)
        take[cmd->ids[i]] = true;
    /* ':' first: a missing value comes back as ':' instead of a message
     * from getopt, so the one line below names the option. */
    shorts[ns++] = ':';
    for (int i = 0; i < OPT_COUNT; i++) {
        const opt_row_t *r = &rows[i];
        int ha = r->has_arg ? required_argument : no_argument;

        if (!take[i])
            continue;
        longopts[nl++] = (struct option){ r->name, ha, NULL, opt_val(i) };
        if (r->alias != NULL)
            longopts[nl++] = (struct option){ r->alias, ha, NULL,
                                              opt_val(i) };
        if (r->letter) {
            shorts[ns++] = r->letter;
            if (r->has_arg)
                shorts[ns++] = ':';
        }
    }
    longopts[nl] = (struct option){ NULL, 0, NULL, 0 };
    shorts[ns] = '\0';

    opterr = 0;
    optind = 0;     /* glibc: start afresh (the tests parse many times) */
    while ((c = getopt_long(argc, argv, shorts, longopts, NULL)) != -1) {
        const char *word = argv[optind - 1];
        int id;

        if (c == ':') {
            id = val_id(optopt);
            return cli_fail(cmd->name, CLI_EXIT_USAGE, "option --%s needs "
                            "a value", id >= 0 ? rows[id].name : "?");
        }
        if (c == '?') {
            id = val_id(optopt);
            if (id >= 0 && optopt != 0 && take[id] && !rows[id].has_arg)
                return cli_fail(cmd->name, CLI_EXIT_USAGE, "option --%s "
                                "takes no value", rows[id].name);
            if (optopt != 0 && optopt < 256)
                return cli_fail(cmd->name, CLI_EXIT_USAGE, "unknown option "
                                "'-%c' ('ccsynth %s --help' lists the "
                                "options)", optopt, cmd->name);
            return cli_fail(cmd->name, CLI_EXIT_USAGE, "unknown option '%s' "
                            "('ccsynth %s --help' lists the options)", word,
                            cmd->name);
        }
        id = val_id(c);
        if (id == OPT_HELP) {
            cmd->usage(stdout);
            o->help = true;
            return CLI_EXIT_OK;
        }
        /* "--straggler-delay --json": the value is missing, not --json */
        if (optarg != NULL && optarg[0] == '-' && optarg[1] == '-')
            return cli_fail(cmd->name, CLI_EXIT_USAGE, "option --%s needs "
                            "a value", rows[id].name);
        st = set_one(o, (opt_id_t)id, rows[id].has_arg ? optarg : NULL,
                     &err);
        if (st != CCS_OK)
            return cli_fail(cmd->name, cli_exit_code(st), "%s",
                            ccs_err_msg(&err, st));
    }
    /* The GPU executors do not run the dataflow mode: commands whose
     * results become plans (tune), which any executor may load, must not
     * pick by it, so it goes with the window option, which only sim and
     * compare take. */
    if (o->sim.mode == SIM_MODE_DATAFLOW && !take[OPT_WINDOW])
        return cli_fail(cmd->name, CLI_EXIT_USAGE, "--mode dataflow is "
                        "for sim and compare (the CUDA and NCCL executors "
                        "do not run it)");
    if (o->sim.window != 0 && o->sim.mode != SIM_MODE_DATAFLOW)
        return cli_fail(cmd->name, CLI_EXIT_USAGE, "--window is for "
                        "--mode dataflow");
    o->args = argv + optind;
    o->nargs = argc - optind;
    if (cmd->max_args >= 0 && o->nargs > cmd->max_args)
        return cli_fail(cmd->name, CLI_EXIT_USAGE, "unexpected argument "
                        "'%s'", o->args[cmd->max_args]);
    return CLI_EXIT_OK;
}
