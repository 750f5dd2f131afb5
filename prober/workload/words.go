package workload

import "strings"

// wordList is the fixed vocabulary prompts are built from: common, short,
// lowercase English words that most BPE and SentencePiece tokenizers encode
// as one token each when preceded by a space. Changing it changes every
// generated prompt (and the workload fingerprint's meaning): append only
// with a changelog entry.
var wordList = strings.Fields(`
a I
an as at be by do go he if in is it me my no of on or so to up us we
all and any are ask bad big box boy but buy can car cat cup cut day did dog
eat end far few fix fly for fun get got gun had has her him his hot how ice
its job key kid law lay led leg let lie lot low man map may men mix net new
not now odd off oil old one our out own pay per put ran red run sat saw say
sea see set she sit six sky son sun ten the too top try two use war was way
who why win yes yet you
able also area army away baby back ball bank base bear beat bill bird blue
boat body book born both call came card care case cell city cold come cost
dark data deal deep door down draw drop each east easy edge else even ever
face fact fall farm fast fear feel file fill find fine fire firm fish five
food foot form four free full game gave girl give goal gold good grow hair
half hand hard have head hear heat help here high hold home hope hour huge
idea into item just keep kind king knew know land last late lead left less
life like line list live long look lose loss love made main make many mark
meet mind miss more most move much must name near need news next nice note
once only open over page paid pain part pass past path pick plan play poor
pull push rate read real rest rich ride rise risk road rock role room rule
safe sale same save seat seek seem sell send ship shot show side sign sing
size skin slow soft some song soon sort star stay step stop such sure take
talk task team tell term test than that them then they thin this time told
tone took tree true turn type unit upon very view vote wait walk wall want
warm wash wave weak wear week well went were west what when whom wide wife
will wind wine wish with wood word work yard year your zone
about above actor admit adult after again agent agree ahead alive allow
alone along among apply argue arise aside avoid award aware basic beach
begin being below birth black blood board brain bread break bring brown
build buyer cause chair cheap check chest chief child civil claim class
clean clear clock close coach coast could count court cover crime cross
dance death doubt draft dream dress drink drive early earth eight empty
enemy enjoy enter entry equal error event every exact exist extra faith
field fight final first floor focus force frame fresh front fruit funny
giant glass grant grass great green group guard guess guest guide happy
heart heavy horse hotel house human ideal image index inner issue joint
judge knife large later laugh layer learn least leave legal level light
limit local logic loose lower lucky lunch major maker march match maybe
metal might minor model money month moral motor mouth music never night
noise north novel nurse occur ocean offer often order other owner paint
panel paper party peace phase phone photo piece pilot place plane plant
plate point power press price pride prime print prior proof proud prove
queen quick quiet quite radio raise range reach ready refer relax reply
right river rough round route royal rural scale scene scope score sense
serve seven shall shape share sharp sheet shelf shift shirt shock shoot
short sight skill sleep small smart smile smoke solid solve sorry sound
south space speak speed spend sport staff stage stand start state steal
steel stick still stock stone store storm story study stuff style sugar
table taste teach thank theme there these thick thing think third those
three throw tight title today topic total touch tough tower track trade
train treat trend trial truck truly trust truth twice under union until
upper urban usual valid value video visit voice waste watch water wheel
where which while white whole whose woman world worry would write wrong
young youth
across action active actual advice affect afford agency amount animal
answer anyone appeal appear around arrive artist attack author avenue
battle beauty become before behind belief better beyond border bottom
branch breath bridge bright broken budget burden button camera cancer
career carbon center chance change charge choice choose church circle
client closed coffee column combat common corner cotton county couple
course credit crisis custom damage danger dealer debate decade decide
defend degree demand depend design desire detail device dinner direct
doctor dollar domain double driver during easily eating editor effect
effort either eleven emerge empire energy engine enough entire escape
estate ethnic evening exactly expand expect expert export extend
factor fairly family famous father fellow female figure finger finish
flight flower follow forest forget formal former fourth friend future
garden gender gently global golden ground growth guilty handle happen
health height hidden honest island itself junior kitchen letter listen
little living market master matter member memory method middle minute
mirror mobile modern moment mother motion moving murder museum mutual
myself narrow nation nature nearby nearly nobody normal notice number
object obtain office online option orange origin output parent partly
people period person planet player please plenty pocket police policy
prefer pretty prince prison profit proper public pursue rather reader
reason recall recent record reduce reform region relate remain remote
remove repeat report rescue result return review reward rising safety
salary sample school screen search season second secret sector secure
select senior series settle severe should signal silent silver simple
single sister smooth source speech spirit spread spring square stable
status steady stream street strike string strong studio submit sudden
summer supply surely survey switch symbol system talent target theory
thirty though threat throat ticket timber tissue toward travel treaty
unique unless unlike update useful valley victim vision volume walker
wealth weapon weekly weight window winner winter within wonder worker
writer yellow
`)

// fillerWords replace the last word of a prompt when adding that word
// overshoots the target token count: short words likely to be a single
// token, tried in this order, repeated as often as tokens are missing.
var fillerWords = []string{"a", "I", "an", "of", "to", "in", "is", "it", "the", "and"}
