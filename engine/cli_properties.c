/* cli_properties.c: `kingest properties`, the job properties kingest reads, with their defaults and meaning. */
#include <stdio.h>

#include "cli.h"

/* clang-format off */
const char *const kg_cli_usage_properties =
    "Usage: kingest properties\n"
    "       kingest properties --markdown\n"
    "\n"
    "Lists the job properties kingest reads, with their defaults and meaning.\n"
    "\n"
    "Options:\n"
    "      --markdown  Print them as the Markdown table of docs/properties.md\n"
    "  -h, --help      Show this help\n";
/* clang-format on */

int kg_cli_properties(int argc, char **argv) {
  kg_args_t a;
  int prc = kg_cli_parse_args(argc, argv, 2, KG_OPTS_PROPERTIES, &a, kg_cli_usage_properties);
  if (prc) return prc == 1 ? 0 : 2;
  if (a.npositional) {
    fprintf(stderr, "kingest: properties takes no arguments\n%s", kg_cli_usage_properties);
    return 2;
  }
  kg_config_print_properties(stdout, kg_cli_has(&a, KG_OPT_MARKDOWN));
  return 0;
}
