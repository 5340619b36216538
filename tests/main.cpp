// Catch2 v2 main for the single test executable; rapidcheck integrates via <rapidcheck/catch.h>.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
