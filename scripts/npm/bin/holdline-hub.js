#!/usr/bin/env node
'use strict';
require('../lib/launch')('holdline-hub');
