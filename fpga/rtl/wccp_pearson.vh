// RFC 3074 section 6 mixing table (loadb_mx_tbl) as a 256 x 8 ROM: the Pearson hash step
// hash = pearson_mix(hash ^ key_byte). Same table as firmware/wccp/pearson.py (MIX);
// tests/test_pearson.py checks that the two agree.
function [7:0] pearson_mix;
    input [7:0] a;
    begin
        case (a)
        8'd0: pearson_mix = 8'd251; 8'd1: pearson_mix = 8'd175; 8'd2: pearson_mix = 8'd119; 8'd3: pearson_mix = 8'd215;
        8'd4: pearson_mix = 8'd81; 8'd5: pearson_mix = 8'd14; 8'd6: pearson_mix = 8'd79; 8'd7: pearson_mix = 8'd191;
        8'd8: pearson_mix = 8'd103; 8'd9: pearson_mix = 8'd49; 8'd10: pearson_mix = 8'd181; 8'd11: pearson_mix = 8'd143;
        8'd12: pearson_mix = 8'd186; 8'd13: pearson_mix = 8'd157; 8'd14: pearson_mix = 8'd0; 8'd15: pearson_mix = 8'd232;
        8'd16: pearson_mix = 8'd31; 8'd17: pearson_mix = 8'd32; 8'd18: pearson_mix = 8'd55; 8'd19: pearson_mix = 8'd60;
        8'd20: pearson_mix = 8'd152; 8'd21: pearson_mix = 8'd58; 8'd22: pearson_mix = 8'd17; 8'd23: pearson_mix = 8'd237;
        8'd24: pearson_mix = 8'd174; 8'd25: pearson_mix = 8'd70; 8'd26: pearson_mix = 8'd160; 8'd27: pearson_mix = 8'd144;
        8'd28: pearson_mix = 8'd220; 8'd29: pearson_mix = 8'd90; 8'd30: pearson_mix = 8'd57; 8'd31: pearson_mix = 8'd223;
        8'd32: pearson_mix = 8'd59; 8'd33: pearson_mix = 8'd3; 8'd34: pearson_mix = 8'd18; 8'd35: pearson_mix = 8'd140;
        8'd36: pearson_mix = 8'd111; 8'd37: pearson_mix = 8'd166; 8'd38: pearson_mix = 8'd203; 8'd39: pearson_mix = 8'd196;
        8'd40: pearson_mix = 8'd134; 8'd41: pearson_mix = 8'd243; 8'd42: pearson_mix = 8'd124; 8'd43: pearson_mix = 8'd95;
        8'd44: pearson_mix = 8'd222; 8'd45: pearson_mix = 8'd179; 8'd46: pearson_mix = 8'd197; 8'd47: pearson_mix = 8'd65;
        8'd48: pearson_mix = 8'd180; 8'd49: pearson_mix = 8'd48; 8'd50: pearson_mix = 8'd36; 8'd51: pearson_mix = 8'd15;
        8'd52: pearson_mix = 8'd107; 8'd53: pearson_mix = 8'd46; 8'd54: pearson_mix = 8'd233; 8'd55: pearson_mix = 8'd130;
        8'd56: pearson_mix = 8'd165; 8'd57: pearson_mix = 8'd30; 8'd58: pearson_mix = 8'd123; 8'd59: pearson_mix = 8'd161;
        8'd60: pearson_mix = 8'd209; 8'd61: pearson_mix = 8'd23; 8'd62: pearson_mix = 8'd97; 8'd63: pearson_mix = 8'd16;
        8'd64: pearson_mix = 8'd40; 8'd65: pearson_mix = 8'd91; 8'd66: pearson_mix = 8'd219; 8'd67: pearson_mix = 8'd61;
        8'd68: pearson_mix = 8'd100; 8'd69: pearson_mix = 8'd10; 8'd70: pearson_mix = 8'd210; 8'd71: pearson_mix = 8'd109;
        8'd72: pearson_mix = 8'd250; 8'd73: pearson_mix = 8'd127; 8'd74: pearson_mix = 8'd22; 8'd75: pearson_mix = 8'd138;
        8'd76: pearson_mix = 8'd29; 8'd77: pearson_mix = 8'd108; 8'd78: pearson_mix = 8'd244; 8'd79: pearson_mix = 8'd67;
        8'd80: pearson_mix = 8'd207; 8'd81: pearson_mix = 8'd9; 8'd82: pearson_mix = 8'd178; 8'd83: pearson_mix = 8'd204;
        8'd84: pearson_mix = 8'd74; 8'd85: pearson_mix = 8'd98; 8'd86: pearson_mix = 8'd126; 8'd87: pearson_mix = 8'd249;
        8'd88: pearson_mix = 8'd167; 8'd89: pearson_mix = 8'd116; 8'd90: pearson_mix = 8'd34; 8'd91: pearson_mix = 8'd77;
        8'd92: pearson_mix = 8'd193; 8'd93: pearson_mix = 8'd200; 8'd94: pearson_mix = 8'd121; 8'd95: pearson_mix = 8'd5;
        8'd96: pearson_mix = 8'd20; 8'd97: pearson_mix = 8'd113; 8'd98: pearson_mix = 8'd71; 8'd99: pearson_mix = 8'd35;
        8'd100: pearson_mix = 8'd128; 8'd101: pearson_mix = 8'd13; 8'd102: pearson_mix = 8'd182; 8'd103: pearson_mix = 8'd94;
        8'd104: pearson_mix = 8'd25; 8'd105: pearson_mix = 8'd226; 8'd106: pearson_mix = 8'd227; 8'd107: pearson_mix = 8'd199;
        8'd108: pearson_mix = 8'd75; 8'd109: pearson_mix = 8'd27; 8'd110: pearson_mix = 8'd41; 8'd111: pearson_mix = 8'd245;
        8'd112: pearson_mix = 8'd230; 8'd113: pearson_mix = 8'd224; 8'd114: pearson_mix = 8'd43; 8'd115: pearson_mix = 8'd225;
        8'd116: pearson_mix = 8'd177; 8'd117: pearson_mix = 8'd26; 8'd118: pearson_mix = 8'd155; 8'd119: pearson_mix = 8'd150;
        8'd120: pearson_mix = 8'd212; 8'd121: pearson_mix = 8'd142; 8'd122: pearson_mix = 8'd218; 8'd123: pearson_mix = 8'd115;
        8'd124: pearson_mix = 8'd241; 8'd125: pearson_mix = 8'd73; 8'd126: pearson_mix = 8'd88; 8'd127: pearson_mix = 8'd105;
        8'd128: pearson_mix = 8'd39; 8'd129: pearson_mix = 8'd114; 8'd130: pearson_mix = 8'd62; 8'd131: pearson_mix = 8'd255;
        8'd132: pearson_mix = 8'd192; 8'd133: pearson_mix = 8'd201; 8'd134: pearson_mix = 8'd145; 8'd135: pearson_mix = 8'd214;
        8'd136: pearson_mix = 8'd168; 8'd137: pearson_mix = 8'd158; 8'd138: pearson_mix = 8'd221; 8'd139: pearson_mix = 8'd148;
        8'd140: pearson_mix = 8'd154; 8'd141: pearson_mix = 8'd122; 8'd142: pearson_mix = 8'd12; 8'd143: pearson_mix = 8'd84;
        8'd144: pearson_mix = 8'd82; 8'd145: pearson_mix = 8'd163; 8'd146: pearson_mix = 8'd44; 8'd147: pearson_mix = 8'd139;
        8'd148: pearson_mix = 8'd228; 8'd149: pearson_mix = 8'd236; 8'd150: pearson_mix = 8'd205; 8'd151: pearson_mix = 8'd242;
        8'd152: pearson_mix = 8'd217; 8'd153: pearson_mix = 8'd11; 8'd154: pearson_mix = 8'd187; 8'd155: pearson_mix = 8'd146;
        8'd156: pearson_mix = 8'd159; 8'd157: pearson_mix = 8'd64; 8'd158: pearson_mix = 8'd86; 8'd159: pearson_mix = 8'd239;
        8'd160: pearson_mix = 8'd195; 8'd161: pearson_mix = 8'd42; 8'd162: pearson_mix = 8'd106; 8'd163: pearson_mix = 8'd198;
        8'd164: pearson_mix = 8'd118; 8'd165: pearson_mix = 8'd112; 8'd166: pearson_mix = 8'd184; 8'd167: pearson_mix = 8'd172;
        8'd168: pearson_mix = 8'd87; 8'd169: pearson_mix = 8'd2; 8'd170: pearson_mix = 8'd173; 8'd171: pearson_mix = 8'd117;
        8'd172: pearson_mix = 8'd176; 8'd173: pearson_mix = 8'd229; 8'd174: pearson_mix = 8'd247; 8'd175: pearson_mix = 8'd253;
        8'd176: pearson_mix = 8'd137; 8'd177: pearson_mix = 8'd185; 8'd178: pearson_mix = 8'd99; 8'd179: pearson_mix = 8'd164;
        8'd180: pearson_mix = 8'd102; 8'd181: pearson_mix = 8'd147; 8'd182: pearson_mix = 8'd45; 8'd183: pearson_mix = 8'd66;
        8'd184: pearson_mix = 8'd231; 8'd185: pearson_mix = 8'd52; 8'd186: pearson_mix = 8'd141; 8'd187: pearson_mix = 8'd211;
        8'd188: pearson_mix = 8'd194; 8'd189: pearson_mix = 8'd206; 8'd190: pearson_mix = 8'd246; 8'd191: pearson_mix = 8'd238;
        8'd192: pearson_mix = 8'd56; 8'd193: pearson_mix = 8'd110; 8'd194: pearson_mix = 8'd78; 8'd195: pearson_mix = 8'd248;
        8'd196: pearson_mix = 8'd63; 8'd197: pearson_mix = 8'd240; 8'd198: pearson_mix = 8'd189; 8'd199: pearson_mix = 8'd93;
        8'd200: pearson_mix = 8'd92; 8'd201: pearson_mix = 8'd51; 8'd202: pearson_mix = 8'd53; 8'd203: pearson_mix = 8'd183;
        8'd204: pearson_mix = 8'd19; 8'd205: pearson_mix = 8'd171; 8'd206: pearson_mix = 8'd72; 8'd207: pearson_mix = 8'd50;
        8'd208: pearson_mix = 8'd33; 8'd209: pearson_mix = 8'd104; 8'd210: pearson_mix = 8'd101; 8'd211: pearson_mix = 8'd69;
        8'd212: pearson_mix = 8'd8; 8'd213: pearson_mix = 8'd252; 8'd214: pearson_mix = 8'd83; 8'd215: pearson_mix = 8'd120;
        8'd216: pearson_mix = 8'd76; 8'd217: pearson_mix = 8'd135; 8'd218: pearson_mix = 8'd85; 8'd219: pearson_mix = 8'd54;
        8'd220: pearson_mix = 8'd202; 8'd221: pearson_mix = 8'd125; 8'd222: pearson_mix = 8'd188; 8'd223: pearson_mix = 8'd213;
        8'd224: pearson_mix = 8'd96; 8'd225: pearson_mix = 8'd235; 8'd226: pearson_mix = 8'd136; 8'd227: pearson_mix = 8'd208;
        8'd228: pearson_mix = 8'd162; 8'd229: pearson_mix = 8'd129; 8'd230: pearson_mix = 8'd190; 8'd231: pearson_mix = 8'd132;
        8'd232: pearson_mix = 8'd156; 8'd233: pearson_mix = 8'd38; 8'd234: pearson_mix = 8'd47; 8'd235: pearson_mix = 8'd1;
        8'd236: pearson_mix = 8'd7; 8'd237: pearson_mix = 8'd254; 8'd238: pearson_mix = 8'd24; 8'd239: pearson_mix = 8'd4;
        8'd240: pearson_mix = 8'd216; 8'd241: pearson_mix = 8'd131; 8'd242: pearson_mix = 8'd89; 8'd243: pearson_mix = 8'd21;
        8'd244: pearson_mix = 8'd28; 8'd245: pearson_mix = 8'd133; 8'd246: pearson_mix = 8'd37; 8'd247: pearson_mix = 8'd153;
        8'd248: pearson_mix = 8'd149; 8'd249: pearson_mix = 8'd80; 8'd250: pearson_mix = 8'd170; 8'd251: pearson_mix = 8'd68;
        8'd252: pearson_mix = 8'd6; 8'd253: pearson_mix = 8'd169; 8'd254: pearson_mix = 8'd234; 8'd255: pearson_mix = 8'd151;
        default: pearson_mix = 8'd0;
        endcase
    end
endfunction
